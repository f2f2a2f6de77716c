"""The runtime's errors: one root, and the table of every code a tool run can fail with.

Every exception the runtime and the handlers raise derives from :class:`ChatflowError` (the
SDK has its own root, ``chatflow_agent.errors.ChatflowAgentError``). A tool run fails with a
:class:`ToolFailure`, and every ToolFailure is made from a row of :class:`ErrorCode`: its stable
snake_case ``code`` (a result's ``error.code``), whether it is ``fatal`` (it ends the whole
callTool tree at once, whatever ``onError`` says on the way up) and its message template (the
text of the contract in docs/spec.md, verbatim where its error table gives one). The docs
site renders the rows into docs/errors.md; ``tests/test_error_codes.py`` fails on a
ToolFailure made from a literal code anywhere else.

Adding a code is one row, and nothing else: ``NAME = Row("code", "template with {fields}",
"Raised when ...")``, then ``raise ErrorCode.NAME.failure(field=...)`` where it happens.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple


class ChatflowError(Exception):
    """Raised when chatflow-agent cannot do what was asked; the root of the runtime's errors."""


class ConfigurationError(ChatflowError):
    """Raised when settings or the environment cannot work (no Redis server, bad URL)."""


class InvalidCommand(ChatflowError):
    """Raised when an executeTool command does not fit the wire types."""


class ToolFailure(ChatflowError):
    """Raised when a tool run fails; made by :meth:`ErrorCode.failure`, never from a literal.

    ``code`` is a plain string: a failure read back from a stream (a child's result, a recorded
    log) keeps the code it was written with, even one this version has no row for."""

    def __init__(self, code: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fatal = fatal

    def __repr__(self) -> str:
        return f"ToolFailure({self.code!r}, {self.message!r})"

    @classmethod
    def recorded(cls, code: str, message: str) -> ToolFailure:
        """A failure read back from the wire: fatal as its row says (unknown codes are not)."""
        row = ErrorCode.lookup(code)
        return cls(code, message, fatal=row is not None and row.fatal)

    def reworded(self, message: str) -> ToolFailure:
        """The same failure (code, fatality) told differently: a secret scrubbed, a prefix."""
        return ToolFailure(self.code, message, fatal=self.fatal)


class Row(NamedTuple):
    """One row of the table: ``template`` is ``str.format``-ed with the failure's fields; a
    ``detail`` given to :meth:`ErrorCode.failure` is added through ``tail``."""

    code: str
    template: str
    when: str
    fatal: bool = False
    tail: str = " ({detail})"


class ErrorCode(StrEnum):
    """Every code a result's ``error.code`` can carry. Each member is its code (a ``str``);
    ``when`` says when it is raised, ``fatal`` whether it ends the whole tree."""

    template: str
    when: str
    fatal: bool
    tail: str

    def __new__(cls, code: str, template: str, when: str, fatal: bool = False,
                tail: str = " ({detail})") -> ErrorCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.template, member.when, member.fatal, member.tail = template, when, fatal, tail
        return member

    @classmethod
    def lookup(cls, code: str) -> ErrorCode | None:
        """The row of ``code``, or None for a code this version does not define."""
        found: ErrorCode | None = cls._value2member_map_.get(code)  # type: ignore[assignment]
        return found

    def failure(self, detail: str = "", **fields: Any) -> ToolFailure:
        """A ToolFailure of this row: the template filled with ``fields``, then ``detail``."""
        message = self.template.format(**fields)
        if detail:
            message += self.tail.format(detail=detail)
        return ToolFailure(self._value_, message, fatal=self.fatal)

    def with_message(self, message: str) -> ToolFailure:
        """A failure of this row whose message was built elsewhere: a lower layer's failure
        (Outbound's) relayed under this code, its text kept behind the block's prefix."""
        return ToolFailure(self._value_, message, fatal=self.fatal)

    # -- the contract's table (docs/spec.md), messages verbatim --------------------------
    TOOL_NOT_FOUND = Row(
        "tool_not_found", "tool não encontrada: publishedToolId={pt}",
        "Raised when tool:{publishedToolId} does not exist.")
    TOOL_DEFINITION_INVALID = Row(
        "tool_definition_invalid", "tool com definição inválida: publishedToolId={pt}",
        "Raised when a published tool is not JSON or its definition does not fit the types; "
        "the detail names the field.")
    TOOL_NOT_PUBLISHED = Row(
        "tool_not_published", "tool não publicada: publishedToolId={pt}",
        "Raised when a definition has no onboardingBlockId.")
    TOOL_BLOCK_INVALID = Row(
        "tool_block_invalid", "tool com bloco inválido: blockId={block} publishedToolId={pt}",
        "Raised when navigation names a block the definition does not have.")
    TOOL_BLOCK_TYPE_UNKNOWN = Row(
        "tool_block_type_unknown", "bloco com tipo desconhecido na tool: publishedToolId={pt}",
        "Raised when navigation reaches a block whose type is unknown (only then: such a "
        "block does not make the definition invalid).")
    TOOL_TIMEOUT = Row(
        "tool_timeout", "tool timeout (>{seconds}s): publishedToolId={pt}",
        "Raised when the tree's one deadline passes; fatal: the deadline is the whole tree's, "
        "so no onError on the way up can go on.", fatal=True)
    TOOL_LOOP = Row(
        "tool_loop", "tool loop detectado (>{max_hops} hops): publishedToolId={pt}",
        "Raised when one execution takes more than MAX_TOOL_HOPS block steps.")
    TOOL_CYCLE = Row(
        "tool_cycle", "ciclo de tools detectado: {chain}",
        "Raised when a callTool would call a tool already on its chain (A → B → A).")
    TOOL_DEPTH_EXCEEDED = Row(
        "tool_depth_exceeded", "profundidade máxima de tools atingida (>{max_depth})",
        "Raised when a callTool would nest deeper than MAX_TOOL_DEPTH.")

    # -- the runtime's own guardrails ----------------------------------------------------
    TOOL_INVOCATIONS_EXCEEDED = Row(
        "tool_invocations_exceeded", "máximo de invocações de tools atingido (>{max_invocations})",
        "Raised when a tree would run more tools than CHATFLOW_MAX_INVOCATIONS.")
    BLOCK_NOT_SUPPORTED = Row(
        "block_not_supported",
        "bloco {kind} ainda não suportado por este runtime: blockId={block} publishedToolId={pt}",
        "Raised when a known block type has no executor in this process.")
    EXECUTION_CANCELLED = Row(
        "execution_cancelled", "execução cancelada",
        "Raised when a tree is cancelled (chatflow cancel, the API), and when a request of a "
        "tree that is already answered is not sent. Fatal in both: a cancellation is the "
        "whole tree's, like the deadline; a request refused after the answer belongs to a "
        "tree whose every later commit is dropped, so ending it at once plans nothing more, "
        "and replay reads the code as fatal either way.", fatal=True, tail=": {detail}")
    INTERNAL_ERROR = Row(
        "internal_error", "falha interna do runtime: {cause}",
        "Raised when a step kept failing (dead-lettered) or crashed on a bug; fatal: the tree "
        "still gets exactly one answer.", fatal=True)
    INVALID_COMMAND = Row(
        "invalid_command", "{cause}",
        "Raised when a command has a commandId but does not fit the wire types, or names a "
        "replyTo outside CHATFLOW_REPLY_STREAMS; the message names the field.")
    RENDER_TOO_LARGE = Row(
        "render_too_large", "{cause}",
        "Raised when an interpolated text would pass CHATFLOW_MAX_RENDERED_CHARS.")
    VARIABLES_TOO_LARGE = Row(
        "variables_too_large",
        "the execution's variables would take {size} bytes, over the limit of {cap} bytes "
        "(variables_max_bytes): keep less in variables, or raise the limit",
        "Raised when a block's writes would take the variables past variables_max_bytes.")

    MOCK_INVALID = Row(
        "mock_invalid", "mock inválido para {block}: {cause}",
        "Raised when a saved test case's mock does not fit its block, or a block of a test run "
        "has no mock; nothing is sent.")

    # -- executeScript (the sandbox sets the message) ------------------------------------
    SCRIPT_ERROR = Row("script_error", "{cause}", "Raised when a script throws.")
    SCRIPT_TIMEOUT = Row("script_timeout", "{cause}",
                         "Raised when a script runs past CHATFLOW_SCRIPT_TIMEOUT_MS.")
    SCRIPT_MEMORY = Row("script_memory", "{cause}",
                        "Raised when a script needs more than CHATFLOW_SCRIPT_MAX_MEMORY_MB.")
    SCRIPT_SYNTAX = Row("script_syntax", "{cause}", "Raised when a script does not compile.")
    SCRIPT_RESULT = Row("script_result", "{cause}",
                        "Raised when a script returns what is not JSON (a Promise, a cycle).")
    SCRIPT_RESULT_TOO_LARGE = Row(
        "script_result_too_large",
        "script result of {size} bytes exceeds the limit of {cap} bytes "
        "(script_result_max_bytes): return less, or raise the limit",
        "Raised when a script's result is larger than script_result_max_bytes.")

    # -- the edge: an integration server's or an origin's limits and circuit (docs/http.md) --
    RATE_LIMITED = Row(
        "rate_limited",
        "limite de requisições atingido: {target} ({limit}); sem vez antes do prazo da tool",
        "Raised when a call finds no turn under its server's or origin's rate or concurrency "
        "limit before the tree's deadline; nothing is sent.")
    CIRCUIT_OPEN = Row(
        "circuit_open",
        "circuito aberto: {target} ({failures} falhas em {window}s); chamada não enviada, nova "
        "tentativa possível em {seconds}s",
        "Raised when the upstream's circuit is open (too many failures in its window) and this "
        "call is not its half-open probe; nothing is sent.")

    # -- outbound HTTP (runtime/outbound.py), httpCall and callEndpoint ------------------
    HTTP_STATUS = Row(
        "http_status", "{method} {url}: HTTP {status}",
        "Raised when an httpCall or callEndpoint answer has a status of 400 or more (after "
        "the status and body variables are written).")
    HTTP_INVALID_URL = Row(
        "http_invalid_url", "URL inválida: {url!r}",
        "Raised when a URL cannot be sent, or its template takes scheme, host or port from a "
        "variable.")
    HTTP_TIMEOUT = Row(
        "http_timeout", "{what}: sem resposta em {seconds:.1f}s",
        "Raised when no answer (or no free connection) came within the block's timeout.")
    HTTP_TOO_MANY_REDIRECTS = Row(
        "http_too_many_redirects", "{what}: mais de {max_redirects} redirecionamentos",
        "Raised when a request is redirected more than 5 times.")
    HTTP_TLS_ERROR = Row(
        "http_tls_error",
        "{what}: certificado TLS não verificado ({cause}); o servidor precisa de um "
        "certificado de uma CA confiável (ou a CA em CHATFLOW_HTTP_CA_FILE)",
        "Raised when the server's certificate does not verify.")
    HTTP_ERROR = Row(
        "http_error", "{what}: {kind}: {cause}",
        "Raised when the connection fails (refused, reset, DNS).")
    HTTP_RESPONSE_TOO_LARGE = Row(
        "http_response_too_large", "{what}: resposta maior que {max_bytes} bytes",
        "Raised when a response body is larger than the caller's cap (the read stops there).")
    HTTP_BODY_TOO_LARGE = Row(
        "http_body_too_large",
        "{cause} (CHATFLOW_HTTP_MAX_BODY_BYTES); peça menos dados ao servidor (paginação, "
        "filtros) ou aumente o limite",
        "Raised when an httpCall's or callEndpoint's body is larger than "
        "CHATFLOW_HTTP_MAX_BODY_BYTES.")
    EGRESS_DENIED = Row(
        "egress_denied", "{what}: egress bloqueado: {cause}",
        "Raised when the egress policy refuses a destination (docs/http.md).")
    SECRET_ORIGIN_MISMATCH = Row(
        "secret_origin_mismatch", "{what}: segredo salvo para {saved} não é enviado a {target}: "
        "{secrets}",
        "Raised when a secret (an LLM key, a secret header) would go to an origin other than "
        "the one it was saved for.")

    # -- callEndpoint --------------------------------------------------------------------
    ENDPOINT_SERVER_NOT_FOUND = Row(
        "endpoint_server_not_found", "servidor de integração não encontrado: serverId={server}",
        "Raised when integration:server:{serverId} does not exist.")
    ENDPOINT_SERVER_INVALID = Row(
        "endpoint_server_invalid",
        "servidor de integração com configuração inválida: serverId={server}",
        "Raised when an integration server's cached JSON has no endpoints, or its retry, "
        "limits or circuitBreaker do not fit their types (the detail names the field).")
    ENDPOINT_NOT_FOUND = Row(
        "endpoint_not_found",
        "endpoint de integração não encontrado: endpointId={endpoint} serverId={server}",
        "Raised when the server has no such endpoint.")
    ENDPOINT_BODY_INVALID = Row(
        "endpoint_body_invalid", "endpoint {endpoint}: {cause}",
        "Raised when the endpoint's request cannot be built from the parameters.")

    # -- callAI --------------------------------------------------------------------------
    LLM_CREDENTIAL_NOT_FOUND = Row(
        "llm_credential_not_found",
        "callAI: credencial LLM não encontrada: llmCredentialId={credential}",
        "Raised when llm:credential:{id} does not exist.")
    LLM_CREDENTIAL_INVALID = Row(
        "llm_credential_invalid",
        "callAI: credencial LLM inválida: llmCredentialId={credential} ({cause})",
        "Raised when a credential's JSON does not fit its type.")
    LLM_PROVIDER_UNSUPPORTED = Row(
        "llm_provider_unsupported",
        "callAI: provedor {provider!r} não suportado (llmCredentialId={credential}); use 'openai'",
        "Raised when a credential names a provider callAI does not speak.")
    LLM_CREDENTIAL_NO_KEY = Row(
        "llm_credential_no_key",
        "callAI: a credencial LLM llmCredentialId={credential} não tem apiKey (apagada quando "
        "a baseUrl mudou de origem); salve uma nova",
        "Raised when a credential has no key (cleared when its baseUrl changed origin).")
    LLM_TIMEOUT = Row(
        "llm_timeout", "{what}: o provedor não respondeu em {seconds:.1f}s",
        "Raised when the provider does not answer within CHATFLOW_LLM_TIMEOUT_MS or the "
        "tree's deadline.")
    LLM_UNREACHABLE = Row(
        "llm_unreachable", "{what}: {cause}", "Raised when the provider cannot be reached.")
    LLM_INVALID_URL = Row(
        "llm_invalid_url", "{what}: {cause}", "Raised when a credential's baseUrl cannot be sent.")
    LLM_RESPONSE_TOO_LARGE = Row(
        "llm_response_too_large", "{what}: {cause}",
        "Raised when the provider's answer is larger than callAI reads.")
    LLM_HTTP_STATUS = Row(
        "llm_http_status", "{what}: o provedor respondeu HTTP {status}",
        "Raised when the provider answers with a status of 400 or more; the detail is its "
        "error message.", tail=": {detail}")
    LLM_BAD_RESPONSE = Row(
        "llm_bad_response", "callAI: resposta inesperada do provedor: {what}",
        "Raised when the provider's answer does not follow the OpenAI wire format.")
    LLM_REFUSED = Row(
        "llm_refused", "callAI: o modelo recusou: {refusal}",
        "Raised when the model refuses (a refusal and no content).")
    LLM_OUTPUT_NOT_JSON = Row(
        "llm_output_not_json", "{what}: a resposta do modelo não é JSON{cut}: {start!r}",
        "Raised when outputFormat is json and the reply does not parse.")
    AI_OUTPUT_TOO_LARGE = Row(
        "ai_output_too_large",
        "{what}: a resposta do modelo tem {size}, mais que o limite de {cap} "
        "(CHATFLOW_AI_MAX_OUTPUT_BYTES); reduza maxTokens ou peça menos",
        "Raised when the model's reply is larger than CHATFLOW_AI_MAX_OUTPUT_BYTES.")
    AI_INPUT_MISSING = Row(
        "ai_input_missing", "callAI {capability}: a variável {name!r} está vazia",
        "Raised when the media variable callAI reads is empty.")
    AI_INPUT_TOO_LARGE = Row(
        "ai_input_too_large", "callAI {capability}: entrada maior que o limite de {cap}",
        "Raised when the media callAI reads is larger than CHATFLOW_AI_MAX_INPUT_BYTES.")
    AI_INPUT_INVALID = Row(
        "ai_input_invalid", "callAI: {cause}",
        "Raised when the media is not base64, or analyzeDocument's is not a readable PDF.")

    # -- fetchMedia ----------------------------------------------------------------------
    MEDIA_TOKEN_MISSING = Row(
        "media_token_missing",
        "fetchMedia (whatsapp): sem token da Graph API: defina authHeader ou router.{field} "
        "no contexto do comando",
        "Raised when whatsapp mode has neither authHeader nor the router's token.")
    MEDIA_ID_MISSING = Row(
        "media_id_missing", "fetchMedia: a variável {name!r} não tem mediaId",
        "Raised when mediaIdVariable is empty.")
    MEDIA_URL_MISSING = Row(
        "media_url_missing", "fetchMedia: a variável {name!r} não tem URL",
        "Raised when urlVariable is empty.")
    MEDIA_HTTP_STATUS = Row(
        "media_http_status", "fetchMedia: {request}: HTTP {status}: {cause}",
        "Raised when the Graph API or the media URL answers with a status of 400 or more.")
    MEDIA_BAD_RESPONSE = Row(
        "media_bad_response",
        "fetchMedia: Graph API GET {url}: resposta sem 'url' para mediaId={media_id}",
        "Raised when the Graph API's answer names no media URL.")
    MEDIA_TOO_LARGE = Row(
        "media_too_large", "fetchMedia: mídia maior que o limite de {cap}: {what}",
        "Raised when the media is larger than CHATFLOW_MEDIA_MAX_BYTES.")
    MEDIA_TIMEOUT = Row(
        "media_timeout", "fetchMedia: mídia não baixada em {seconds:.1f}s",
        "Raised when the media is not downloaded in time.")
    MEDIA_INVALID_URL = Row(
        "media_invalid_url", "fetchMedia: {cause}", "Raised when the media URL cannot be sent.")
    MEDIA_UNREACHABLE = Row(
        "media_unreachable", "fetchMedia: {cause}", "Raised when the media cannot be reached.")


# The contract's rows by name, for the places that raise them.

def tool_not_found(pt: str) -> ToolFailure:
    return ErrorCode.TOOL_NOT_FOUND.failure(pt=pt)


def tool_definition_invalid(pt: str, detail: str = "") -> ToolFailure:
    return ErrorCode.TOOL_DEFINITION_INVALID.failure(detail, pt=pt)


def tool_not_published(pt: str) -> ToolFailure:
    return ErrorCode.TOOL_NOT_PUBLISHED.failure(pt=pt)


def tool_block_invalid(block_id: str, pt: str) -> ToolFailure:
    return ErrorCode.TOOL_BLOCK_INVALID.failure(block=block_id, pt=pt)


def tool_block_type_unknown(pt: str, block_id: str = "", kind: str = "") -> ToolFailure:
    detail = f"blockId={block_id} type={kind}" if kind else ""
    return ErrorCode.TOOL_BLOCK_TYPE_UNKNOWN.failure(detail, pt=pt)


def tool_timeout(pt: str, timeout_ms: int) -> ToolFailure:
    return ErrorCode.TOOL_TIMEOUT.failure(seconds=timeout_ms // 1000, pt=pt)


def tool_loop(pt: str, max_hops: int) -> ToolFailure:
    return ErrorCode.TOOL_LOOP.failure(max_hops=max_hops, pt=pt)


def tool_cycle(chain: list[str]) -> ToolFailure:
    return ErrorCode.TOOL_CYCLE.failure(chain=" → ".join(chain))


def tool_depth(max_depth: int) -> ToolFailure:
    return ErrorCode.TOOL_DEPTH_EXCEEDED.failure(max_depth=max_depth)


def tool_invocations(max_invocations: int) -> ToolFailure:
    return ErrorCode.TOOL_INVOCATIONS_EXCEEDED.failure(max_invocations=max_invocations)


def block_not_supported(kind: str, block_id: str, pt: str) -> ToolFailure:
    return ErrorCode.BLOCK_NOT_SUPPORTED.failure(kind=kind, block=block_id, pt=pt)


def mock_invalid(key: str, detail: str) -> ToolFailure:
    return ErrorCode.MOCK_INVALID.failure(block=f"o bloco {key}", cause=detail)


def execution_cancelled(reason: str = "") -> ToolFailure:
    return ErrorCode.EXECUTION_CANCELLED.failure(reason)


def internal_error(detail: str) -> ToolFailure:
    return ErrorCode.INTERNAL_ERROR.failure(cause=detail)


def render_too_large(cause: object) -> ToolFailure:
    """An interpolation past its cap (``RenderTooLarge``), wherever it was rendering."""
    return ErrorCode.RENDER_TOO_LARGE.failure(cause=cause)


def rate_limited(target: str, limit: str) -> ToolFailure:
    return ErrorCode.RATE_LIMITED.failure(target=target, limit=limit)


def circuit_open(target: str, failures: int, window_ms: int, retry_in_ms: int) -> ToolFailure:
    seconds = max(1, -(-retry_in_ms // 1000))
    return ErrorCode.CIRCUIT_OPEN.failure(target=target, failures=failures,
                                          window=f"{window_ms / 1000:g}", seconds=seconds)

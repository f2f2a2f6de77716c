"""The runtime's error tree.

Every failure that ends a tool carries a stable snake_case ``code`` and the
seed's message, verbatim where the seed's error table gives one. ``fatal``
failures end the whole callTool tree regardless of any ``onError: continue``
on the way up (the shared deadline, a cancellation).
"""

from __future__ import annotations


class ChatflowError(Exception):
    """Raised when chatflow-agent cannot do what was asked; the root of our errors."""


class ConfigurationError(ChatflowError):
    """Raised when settings or the environment cannot work (no Redis server, bad URL)."""


class ToolFailure(ChatflowError):
    """Raised when a tool run fails; ``code`` is stable, ``message`` is the seed's text."""

    def __init__(self, code: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fatal = fatal

    def __repr__(self) -> str:
        return f"ToolFailure({self.code!r}, {self.message!r})"


class InvalidCommand(ChatflowError):
    """Raised when an executeTool command does not fit the wire types."""


# The seed's error table, one constructor per row, messages verbatim.

def tool_not_found(pt: str) -> ToolFailure:
    return ToolFailure("tool_not_found", f"tool não encontrada: publishedToolId={pt}")


def tool_definition_invalid(pt: str, detail: str = "") -> ToolFailure:
    msg = f"tool com definição inválida: publishedToolId={pt}"
    return ToolFailure("tool_definition_invalid", f"{msg} ({detail})" if detail else msg)


def tool_not_published(pt: str) -> ToolFailure:
    return ToolFailure("tool_not_published", f"tool não publicada: publishedToolId={pt}")


def tool_block_invalid(block_id: str, pt: str) -> ToolFailure:
    return ToolFailure(
        "tool_block_invalid", f"tool com bloco inválido: blockId={block_id} publishedToolId={pt}"
    )


def tool_block_type_unknown(pt: str, block_id: str = "", kind: str = "") -> ToolFailure:
    msg = f"bloco com tipo desconhecido na tool: publishedToolId={pt}"
    return ToolFailure(
        "tool_block_type_unknown", f"{msg} (blockId={block_id} type={kind})" if kind else msg
    )


def tool_timeout(pt: str, timeout_ms: int) -> ToolFailure:
    return ToolFailure(
        "tool_timeout", f"tool timeout (>{timeout_ms // 1000}s): publishedToolId={pt}", fatal=True
    )


def tool_loop(pt: str, max_hops: int) -> ToolFailure:
    return ToolFailure("tool_loop", f"tool loop detectado (>{max_hops} hops): publishedToolId={pt}")


def tool_cycle(chain: list[str]) -> ToolFailure:
    return ToolFailure("tool_cycle", f"ciclo de tools detectado: {' → '.join(chain)}")


def tool_depth(max_depth: int) -> ToolFailure:
    return ToolFailure("tool_depth_exceeded", f"profundidade máxima de tools atingida (>{max_depth})")


def tool_invocations(max_invocations: int) -> ToolFailure:
    return ToolFailure(
        "tool_invocations_exceeded",
        f"máximo de invocações de tools atingido (>{max_invocations})",
    )


def block_not_supported(kind: str, block_id: str, pt: str) -> ToolFailure:
    return ToolFailure(
        "block_not_supported",
        f"bloco {kind} ainda não suportado por este runtime: blockId={block_id} publishedToolId={pt}",
    )


def mock_invalid(key: str, detail: str) -> ToolFailure:
    return ToolFailure("mock_invalid", f"mock inválido para o bloco {key}: {detail}")


def execution_cancelled(reason: str = "") -> ToolFailure:
    msg = "execução cancelada"
    return ToolFailure("execution_cancelled", f"{msg}: {reason}" if reason else msg, fatal=True)


def internal_error(detail: str) -> ToolFailure:
    return ToolFailure("internal_error", f"falha interna do runtime: {detail}", fatal=True)


# Calls to the outside world (SPEC, "Extensions to the definition"): an integration server's
# limits and circuit breaker, or an origin's (CHATFLOW_ORIGIN_LIMITS).

def rate_limited(target: str, limit: str) -> ToolFailure:
    return ToolFailure("rate_limited", f"limite de requisições atingido: {target} ({limit}); "
                                       "sem vez antes do prazo da tool")


def circuit_open(target: str, failures: int, window_ms: int, retry_in_ms: int) -> ToolFailure:
    seconds = max(1, -(-retry_in_ms // 1000))
    return ToolFailure("circuit_open", f"circuito aberto: {target} ({failures} falhas em "
                                       f"{window_ms / 1000:g}s); chamada não enviada, nova "
                                       f"tentativa possível em {seconds}s")

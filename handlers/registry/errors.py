"""The HTTP API's errors: one root, and the table of every code an error body can carry.

Every error the API answers is a :class:`RegistryError` (or one of its kinds below, each one
HTTP status), and its body is ``{"error": code, "message": ..., "problems": [...]}``. The
``code`` is a row of :class:`ApiCode`, never a literal: ``raise Conflict(text,
code=ApiCode.IN_TRASH)``. The docs site renders the rows into docs/errors.md;
``tests/test_error_codes.py`` fails on a literal code passed to one of these classes under
handlers/, and on a row nothing raises.

The table is the codes' and not their statuses': a status is the kind's (``Invalid`` is 400,
``NotFound`` 404, ...) and a few codes are answered by two kinds (``in_trash`` is a 404 when
the tool is read, a 409 when it is published).

The runtime's codes (a tool run's ``error.code``) are the other table,
``chatflow.runtime.errors.ErrorCode``; a route that relays one (``tool_not_found`` from the
internal execute route) passes that row.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from chatflow.runtime.errors import ChatflowError, ErrorCode


class ApiCode(StrEnum):
    """Every code an API error body's ``error`` can carry. Each member is its code (a
    ``str``); ``when`` says when it is raised."""

    when: str

    def __new__(cls, code: str, when: str) -> ApiCode:
        member = str.__new__(cls, code)
        member._value_ = code
        member.when = when
        return member

    # -- each kind's own code, when no narrower one says more ---------------------------
    BAD_REQUEST = (
        "bad_request", "Raised when a RegistryError of no narrower kind is raised (the root's "
        "default: every route raises one of the kinds).")
    INVALID = (
        "invalid", "Raised when the request itself is wrong and no narrower code says how "
        "(a fork that cannot start, for one).")
    NOT_FOUND = (
        "not_found", "Raised when the named tool, server, endpoint, credential, test case or "
        "key does not exist, or is another workspace's.")
    CONFLICT = (
        "conflict", "Raised when the request conflicts with the registry's current state and "
        "no narrower code says how.")
    UNAUTHORIZED = (
        "unauthorized", "Raised when a caller sends no API key, an unknown, revoked or expired "
        "one, or a wrong internal secret.")
    FORBIDDEN = (
        "forbidden", "Raised when the key's role does not allow the operation.")
    HISTORY_UNAVAILABLE = (
        "history_unavailable", "Raised when the run history is not configured or its database "
        "cannot answer (503).")
    TOO_MANY_HELD = (
        "too_many_held", "Raised when a long request would hold more connections than its key, "
        "its workspace or the API process may (CHATFLOW_API_HELD_*; 429).")
    IMPORT_BUSY = (
        "import_busy", "Raised when the process already parses as many OpenAPI specs as it "
        "allows (429).")

    # -- the request -------------------------------------------------------------------
    INVALID_REQUEST = (
        "invalid_request", "Raised when a request does not fit its route: a body field, a query "
        "parameter the route does not take, a time, an API key's settings, a JSON body nested "
        "deeper than allowed.")
    BODY_TOO_LARGE = (
        "body_too_large", "Raised when a request body is larger than "
        "CHATFLOW_API_MAX_BODY_BYTES (413).")
    INTERNAL_DISABLED = (
        "internal_disabled", "Raised when an internal route is called while "
        "CHATFLOW_INTERNAL_SECRET is not set.")

    # -- definitions and versions --------------------------------------------------------
    INVALID_DEFINITION = (
        "invalid_definition", "Raised when a definition cannot run or be published; the "
        "problems name each field.")
    DEFINITION_TOO_LARGE = (
        "definition_too_large", "Raised when a definition is more bytes of JSON than "
        "CHATFLOW_DEFINITION_MAX_BYTES.")
    INVALID_BLOCK = (
        "invalid_block", "Raised when the block sent to run alone (the test panel) cannot run; "
        "the problems name each field.")
    INVALID_VERSION = (
        "invalid_version", "Raised when a version is neither a positive number nor 'draft'.")
    VERSION_NOT_FOUND = (
        "version_not_found", "Raised when a tool has no version of the number asked for.")
    VERSION_CONFLICT = (
        "version_conflict", "Raised when a tool or test case was changed meanwhile: the "
        "request's version is not the current one (the body says which is).")

    # -- tools ---------------------------------------------------------------------------
    TOOL_EXISTS = (
        "tool_exists", "Raised when a new tool's id is taken (tool ids are global).")
    NATIVE_NAME_TAKEN = (
        "native_name_taken", "Raised when a tool's nativeName is another tool's.")
    PUBLISHED_ID_TAKEN = (
        "published_id_taken", "Raised when a publishedToolId belongs to another tool.")
    PUBLISHED_ID_MISMATCH = (
        "published_id_mismatch", "Raised when a tool is already published under another "
        "publishedToolId.")
    IN_TRASH = (
        "in_trash", "Raised when a tool in the trash is read (404), published, rolled back or "
        "trashed again (409).")
    NOT_IN_TRASH = (
        "not_in_trash", "Raised when a tool not in the trash is restored (409) or purged (400).")
    TOOL_HAS_CALLERS = (
        "tool_has_callers", "Raised when a purge would remove a tool that published tools "
        "still call.")
    ALREADY_LINKED = (
        "already_linked", "Raised when a tool is linked to an agent it is already linked to.")

    # -- test cases and the publish gate -------------------------------------------------
    TESTS_FAILED = (
        "tests_failed", "Raised when a publish is refused because saved test cases fail on the "
        "draft (the body lists them; force publishes anyway).")
    TESTS_CHANGED = (
        "tests_changed", "Raised when a tool's test cases changed while a gated publish ran "
        "them.")
    TEST_CASE_EXISTS = (
        "test_case_exists", "Raised when a tool already has a test case of the id sent.")
    TEST_CASE_TOO_LARGE = (
        "test_case_too_large", "Raised when a test case is more bytes than "
        "CHATFLOW_TESTS_MAX_CASE_BYTES.")
    TOO_MANY_TEST_CASES = (
        "too_many_test_cases", "Raised when a tool, a workspace or a key already holds as many "
        "test cases as it may (CHATFLOW_TESTS_MAX_*).")

    # -- integration servers and LLM credentials -----------------------------------------
    SERVER_EXISTS = (
        "server_exists", "Raised when a new integration server's id is taken (ids are global).")
    ENDPOINT_EXISTS = (
        "endpoint_exists", "Raised when a server already has an endpoint of the id sent.")
    CREDENTIAL_EXISTS = (
        "credential_exists", "Raised when a new LLM credential's id is taken (ids are global).")
    IN_USE = (
        "in_use", "Raised when a server, an endpoint or an LLM credential to delete is used by "
        "tools (the message names them).")
    INVALID_OPENAPI = (
        "invalid_openapi", "Raised when an OpenAPI spec to import is not UTF-8, empty, cannot "
        "be parsed in time, or declares no operations.")
    MASK_IS_NOT_A_SECRET = (
        "mask_is_not_a_secret", "Raised when a secret value sent is the mask the API answers "
        "with (***) and no stored value stands behind it.")

    # -- secrets and the registry --------------------------------------------------------
    ENCRYPTION_KEY_MISSING = (
        "encryption_key_missing", "Raised when a secret is stored or keys are rotated and no "
        "encryption key is configured.")
    ENCRYPTION_KEY_INVALID = (
        "encryption_key_invalid", "Raised when a configured encryption key is not 32 bytes "
        "(64 hex chars or base64).")
    SECRET_KEY_UNKNOWN = (
        "secret_key_unknown", "Raised when a stored secret was written with a key that is not "
        "among the configured ones.")
    SECRET_UNDECRYPTABLE = (
        "secret_undecryptable", "Raised when a stored secret cannot be decrypted with the "
        "configured keys.")
    SECRET_MISSING = (
        "secret_missing", "Raised when an imported definition names a CHATFLOW_SECRET_* "
        "variable the environment does not set.")
    REGISTRY_BUSY = (
        "registry_busy", "Raised when the registry kept changing under a write until it gave "
        "up; try again.")

    # -- executions and the debug stream -------------------------------------------------
    EXECUTION_NOT_FOUND = (
        "execution_not_found", "Raised when a run is not in the history or its event log "
        "(not finished, expired, pruned, another workspace's, or never existed).")
    FORK_NEEDS_SECRETS = (
        "fork_needs_secrets", "Raised when a fork would run with values the history holds "
        "masked: pass the real variables or a definition that carries them.")
    INVALID_CONTACT = (
        "invalid_contact", "Raised when a contactId is empty, longer than 200 characters, or "
        "holds spaces or slashes.")
    INVALID_EVENT_ID = (
        "invalid_event_id", "Raised when a debug stream's Last-Event-ID or after is not a "
        "stream entry id.")


class RegistryError(ChatflowError):
    """Raised when a registry operation cannot be done; ``status`` is its HTTP status."""

    status = 400
    code: ApiCode | ErrorCode = ApiCode.BAD_REQUEST

    def __init__(self, message: str, *, problems: list[str] | None = None,
                 code: ApiCode | ErrorCode | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []
        self.extra = extra
        if code:
            self.code = code

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": str(self.code), "message": self.message}
        if self.problems:
            out["problems"] = [_split(p) for p in self.problems]
        out.update(self.extra)
        return out

    def __str__(self) -> str:
        lines = [self.message, *(f"  {p}" for p in self.problems)]
        return "\n".join(lines)


def _split(problem: str) -> dict[str, str]:
    path, sep, message = problem.partition(": ")
    return {"path": path, "message": message} if sep else {"path": "$", "message": problem}


class Invalid(RegistryError):
    """Raised when the request itself is wrong (400)."""

    status = 400
    code = ApiCode.INVALID


class NotFound(RegistryError):
    """Raised when the named thing does not exist (404)."""

    status = 404
    code = ApiCode.NOT_FOUND


class Conflict(RegistryError):
    """Raised when the request conflicts with the registry's current state (409)."""

    status = 409
    code = ApiCode.CONFLICT


class Unauthorized(RegistryError):
    """Raised when a caller lacks the credentials a route needs: no, unknown, revoked or
    expired token, or a wrong internal secret (401)."""

    status = 401
    code = ApiCode.UNAUTHORIZED


class Forbidden(RegistryError):
    """Raised when a caller's role does not allow the operation (403)."""

    status = 403
    code = ApiCode.FORBIDDEN

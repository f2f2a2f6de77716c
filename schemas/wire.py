"""Wire types: what crosses the public streams, decoded per message with msgspec.

Every entry the runtime writes to a public stream has one field, ``data``,
holding UTF-8 JSON of one of these structs (SPEC). Names are camelCase exactly
as the contract's TypeScript types spell them (docs/spec.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec

from .renamed import renamed

OnError = Literal["blocking", "continue"]
Next = Literal["continue", "handoff", "defaultException"]


@dataclass(frozen=True, slots=True)
class VariableMapping:
    # One type for the wire and for tool definitions: a stdlib dataclass, which msgspec
    # decodes and pydantic validates (chatflow.schemas.definition imports it from here).

    name: str
    value: str


class ExecuteToolAction(msgspec.Struct, frozen=True):
    id: str
    toolId: str
    publishedToolId: str
    type: Literal["executeTool"] = "executeTool"
    inputVariables: list[VariableMapping] = []
    outputVariable: str = ""
    onError: OnError = "blocking"
    errorVariable: str | None = None
    errorMessage: str | None = None
    errorHandoff: bool | None = None
    conditions: list[dict[str, Any]] | None = None


class CommandContext(msgspec.Struct, frozen=True):
    contactId: str = ""
    variables: dict[str, Any] = {}
    router: dict[str, Any] = {}
    flow: dict[str, Any] = {}
    contact: dict[str, Any] = {}
    debug: bool = False


# Any JSON value is accepted: a traceparent that is not a valid W3C header (a number, a
# malformed string) is ignored, never a failed command (docs/spec.md).
_TraceField = Annotated[Any, msgspec.Meta(
    description="W3C Trace Context header value (a string); a malformed one is ignored")]


class ExecuteToolCommand(msgspec.Struct, frozen=True, omit_defaults=True):
    """An executeTool command. ``traceparent``/``tracestate``: the producer's W3C Trace
    Context; the runtime's spans join that trace. Fields at their defaults are left out when
    encoded, so a command without them carries no byte for them."""

    commandId: str
    action: ExecuteToolAction
    context: CommandContext = CommandContext()
    replyTo: str | None = None
    traceparent: _TraceField = None
    tracestate: _TraceField = None


class ErrorInfo(msgspec.Struct, frozen=True):
    """A result's ``error``: a stable snake_case ``code`` (a row of
    ``chatflow.runtime.errors.ErrorCode``) and its ``message``."""

    code: str
    message: str


class ToolResult(msgspec.Struct, frozen=True):
    commandId: str
    actionId: str | None
    ok: bool
    result: str
    variables: dict[str, Any]
    next: Next
    error: ErrorInfo | None
    durationMs: int
    errorMessage: str | None = None
    executionId: str | None = None


class ToolExecutionStreamEvent(msgspec.Struct, frozen=True):
    """One per tool run, nested ones included, on stream:tool-executions (docs/spec.md)."""

    toolId: str
    publishedToolId: str
    durationMs: int
    success: bool
    occurredAt: str
    executionId: str = ""
    rootExecutionId: str = ""
    commandId: str = ""
    depth: int = 0
    errorCode: str | None = None


class ScopedExecutionEvent(ToolExecutionStreamEvent, frozen=True):
    """The event of a run outside the ``default`` workspace: the same fields and ``workspace``
    last (a consumer that does not know it ignores it, SPEC). A run of ``default`` writes the
    plain event, so its bytes are as before; readers decode this type and get ``default``."""

    workspace: str = "default"


class ToolBlockDebugEvent(msgspec.Struct, frozen=True, omit_defaults=True):
    blockId: str
    blockType: str
    toolId: str
    publishedToolId: str
    depth: int
    durationMs: int = 0
    url: str | None = None
    method: str | None = None
    status: int | None = None
    result: Any = None
    error: str | None = None
    matchedConditionId: str | None = None
    # Why a matchesRegex rule was false other than by not matching (a pattern RE2 refuses,
    # a text over regex_max_text_bytes); absent when every rule was simply evaluated.
    conditionReason: str | None = None
    # A block with a retry policy: every attempt, ``{"status" | "error", "durationMs",
    # "waitMs"}`` (SPEC, "Extensions to the definition").
    attempts: list[dict[str, Any]] | None = None


class DebugEvent(msgspec.Struct, frozen=True, omit_defaults=True):
    """Envelope of an entry on ``stream:debug:{contactId}``."""

    type: Literal["action_start", "action_result"]
    actionType: str
    actionId: str
    commandId: str
    executionId: str
    occurredAt: str
    payload: dict[str, Any]
    # The workspace of the execution tree (left out for ``default``): a workspace's live
    # debug shows its own trees' events, and no registry lookup decides it.
    workspace: str = "default"


class LlmUsageEvent(msgspec.Struct, frozen=True):
    toolId: str
    publishedToolId: str
    credentialId: str
    capability: str
    model: str
    promptTokens: int
    completionTokens: int
    totalTokens: int
    durationMs: int
    occurredAt: str


class DeadLetter(msgspec.Struct, frozen=True):
    """An entry that could not be turned into a result: why, and what it held."""

    reason: str
    stream: str
    entryId: str
    deliveries: int
    raw: str


encoder = msgspec.json.Encoder()


# Names kept for one release: importing one warns and gives the new type. ``ToolError`` was
# this module's name for ErrorInfo; it is the SDK's exception (chatflow_agent.errors) now.
__getattr__ = renamed(__name__, {"ToolError": "ErrorInfo"}, globals())

"""Tool definition types: what people write and publish.

These models use pydantic rather than msgspec: a definition is validated once,
at publish time or the first time a worker meets it, and the people editing it
need every problem reported with its JSON path (``blocks.b1.url: Field
required``). Workers cache the parsed definition by content hash, so pydantic's
cost never sits on the per-step hot path; the per-message wire types in
``schemas.wire`` use msgspec.

A block whose ``type`` is unknown does not invalidate the definition (SPEC):
it parses as :class:`UnknownBlock` and fails only if navigation reaches it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Tag, ValidationError, model_validator
from pydantic import Discriminator as _Discriminator

from .edge import RetryPolicy
from .wire import VariableMapping

OnError = Literal["blocking", "continue"]
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
Operator = Literal[
    "equals", "notEquals", "contains", "notContains", "startsWith", "endsWith",
    "greaterThan", "greaterThanOrEqual", "lessThan", "lessThanOrEqual",
    "isEmpty", "isNotEmpty", "matchesRegex",
]
SLUG_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class _Model(BaseModel):
    # Unknown keys are kept: the builder UI stores things the runtime ignores.
    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)


class BlockTarget(_Model):
    """Where navigation goes: a block, or anything else, which ends the tool."""

    type: str
    blockId: str | None = None

    @model_validator(mode="after")
    def _block_needs_id(self) -> BlockTarget:
        if self.type == "block" and not self.blockId:
            raise ValueError("a target of type 'block' needs a blockId")
        return self


class ConditionRule(_Model):
    variable: str
    operator: Operator
    value: str | None = None


class OutputCondition(_Model):
    id: str
    logic: Literal["and", "or"] = "and"
    rules: list[ConditionRule]
    target: BlockTarget


class CallEndpointParamMapping(_Model):
    name: str
    in_: Literal["route", "query", "body"] = Field(alias="in")
    value: str


class ToolInput(_Model):
    name: str
    type: Literal["string", "number", "boolean", "json"] | None = None
    description: str | None = None
    required: bool | None = None


class _Navigating(_Model):
    id: str
    title: str | None = None
    onError: OnError = "blocking"
    errorVariable: str | None = None
    outputConditions: list[OutputCondition] = Field(default_factory=list)
    defaultOutput: BlockTarget


class HttpCallBlock(_Navigating):
    type: Literal["httpCall"]
    url: str
    method: HttpMethod
    headers: dict[str, str] | None = None
    body: str | None = None
    responseStatusVariable: str | None = None
    responseBodyVariable: str | None = None
    timeoutMs: int | None = Field(default=None, gt=0)
    retry: RetryPolicy | None = None  # schemas/edge.py; runtime/retry.py decides


class ExecuteScriptBlock(_Navigating):
    type: Literal["executeScript"]
    source: str
    inputVariables: list[VariableMapping] = Field(default_factory=list)
    outputVariable: str


class CallEndpointBlock(_Navigating):
    type: Literal["callEndpoint"]
    serverId: str
    endpointId: str
    paramMappings: list[CallEndpointParamMapping] = Field(default_factory=list)
    responseBodyVariable: str | None = None
    responseStatusVariable: str | None = None
    retry: RetryPolicy | None = None  # schemas/edge.py; runtime/retry.py decides


class CallToolBlock(_Navigating):
    type: Literal["callTool"]
    toolId: str
    publishedToolId: str
    inputVariables: list[VariableMapping] = Field(default_factory=list)
    outputVariable: str


class FetchMediaBlock(_Navigating):
    type: Literal["fetchMedia"]
    mode: Literal["whatsapp", "url"]
    mediaIdVariable: str
    urlVariable: str
    authHeader: str | None = None
    base64Variable: str
    mimeTypeVariable: str
    retry: RetryPolicy | None = None  # schemas/edge.py; runtime/retry.py decides


class CallAIBlock(_Navigating):
    """callAI; the capability-specific fields are checked by ``check_callai``."""

    type: Literal["callAI"]
    llmCredentialId: str
    outputVariable: str
    outputFormat: Literal["text", "json"] = "text"
    maxTokens: int | None = Field(default=None, gt=0)
    capability: Literal["transcribeAudio", "analyzeImage", "analyzeDocument", "generateText"]
    inputVariable: str | None = None
    mimeTypeVariable: str | None = None
    language: str | None = None
    model: str | None = None
    prompt: str | None = None
    maxPages: int | None = Field(default=None, gt=0)
    systemPrompt: str | None = None
    userPrompt: str | None = None
    retry: RetryPolicy | None = None  # schemas/edge.py; runtime/retry.py decides

    @model_validator(mode="after")
    def _capability_fields(self) -> CallAIBlock:
        missing = [f for f in CALLAI_REQUIRED[self.capability] if getattr(self, f) in (None, "")]
        if missing:
            raise ValueError(f"capability {self.capability!r} needs: {', '.join(missing)}")
        return self


CALLAI_REQUIRED: dict[str, tuple[str, ...]] = {
    "transcribeAudio": ("inputVariable", "mimeTypeVariable"),
    "analyzeImage": ("inputVariable", "mimeTypeVariable", "model"),
    "analyzeDocument": ("inputVariable", "mimeTypeVariable", "model", "prompt", "maxPages"),
    "generateText": ("model", "userPrompt"),
}


class ReturnBlock(_Model):
    type: Literal["return"]
    id: str
    title: str | None = None
    value: str = ""


class UnknownBlock(_Model):
    """A block of a type this runtime does not know; fails only when reached."""

    type: str
    id: str = ""


KNOWN_BLOCK_TYPES = frozenset(
    {"httpCall", "executeScript", "callEndpoint", "callTool", "fetchMedia", "callAI", "return"}
)


def _block_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in KNOWN_BLOCK_TYPES else "unknown"


Block = (
    HttpCallBlock
    | ExecuteScriptBlock
    | CallEndpointBlock
    | CallToolBlock
    | FetchMediaBlock
    | CallAIBlock
    | ReturnBlock
    | UnknownBlock
)
"""Any block of a tool definition, as code sees it once validated."""

RunnableBlock = (
    HttpCallBlock | ExecuteScriptBlock | CallEndpointBlock | CallToolBlock | FetchMediaBlock
    | CallAIBlock
)
"""A block that runs and then navigates: every block but ``return`` and an unknown type."""

# The same union as pydantic validates it: the ``type`` field picks the model, and a type this
# runtime does not know becomes UnknownBlock (answered at run time, never a publish crash).
ToolBlock = Annotated[
    Annotated[HttpCallBlock, Tag("httpCall")]
    | Annotated[ExecuteScriptBlock, Tag("executeScript")]
    | Annotated[CallEndpointBlock, Tag("callEndpoint")]
    | Annotated[CallToolBlock, Tag("callTool")]
    | Annotated[FetchMediaBlock, Tag("fetchMedia")]
    | Annotated[CallAIBlock, Tag("callAI")]
    | Annotated[ReturnBlock, Tag("return")]
    | Annotated[UnknownBlock, Tag("unknown")],
    _Discriminator(_block_tag),
]


class ToolDefinitionMeta(_Model):
    pass


class ToolDefinition(_Model):
    blocks: dict[str, ToolBlock]
    onboardingBlockId: str | None = None
    inputs: list[ToolInput] | None = None
    meta: dict[str, Any] | None = None
    enabledForAI: bool | None = None
    slug: str | None = None
    description: str | None = None
    returnDescription: str | None = None


class PublishedTool(_Model):
    """The value of ``tool:{publishedToolId}``.

    ``workspace``: the workspace that owns the tool (the registry writes it; a record set by
    hand without it belongs to ``default``). A tree started on this tool runs in it."""

    id: str
    toolId: str
    name: str = ""
    definition: ToolDefinition
    workspace: str = "default"
    # Set on a record the runtime made for one command (a fork's): only that command may
    # start it, and no callTool may name it (runtime/tenancy.py).
    forCommand: str | None = None


def format_validation_error(exc: ValidationError) -> list[str]:
    """One line per problem, each starting with its JSON path."""
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"] if not _is_union_tag(p)) or "<root>"
        lines.append(f"{path}: {err['msg']}")
    return lines


def _is_union_tag(part: object) -> bool:
    return isinstance(part, str) and (part in KNOWN_BLOCK_TYPES or part == "unknown")

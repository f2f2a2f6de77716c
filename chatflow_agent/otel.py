"""OpenTelemetry spans for runs, named after the GenAI semantic conventions.

Needs the ``otel`` extra (``pip install 'chatflow-agent[otel]'``, i.e. opentelemetry-api).
``Runner(agent, hooks=OpenTelemetryHooks())`` gives one ``chat {model}`` span per
model call and one ``execute_tool {name}`` span per tool call, with the
``gen_ai.*`` attributes of https://opentelemetry.io/docs/specs/semconv/gen-ai/.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .core.context import RunContext
from .core.hooks import RunHooks
from .core.messages import Message, ToolCall, ToolResult
from .errors import ChatflowAgentError

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ChatflowAgentError(
        "chatflow_agent.otel needs OpenTelemetry: pip install 'chatflow-agent[otel]'"
    ) from exc

if TYPE_CHECKING:
    from .core.agent import Agent
    from .providers.base import ModelReply

# gen_ai.provider.name values of the conventions, by our provider family.
_PROVIDER_NAMES = {"gemini": "gcp.gemini", "openai": "openai", "anthropic": "anthropic"}


def provider_name(family: str) -> str:
    """``gen_ai.provider.name`` of a provider family (``openai``, ``gemini``, ...)."""
    return _PROVIDER_NAMES.get(family, family)


def model_call_attributes(operation: str, family: str, model: str, *,
                          input_tokens: int | None = None, output_tokens: int | None = None,
                          response_model: str | None = None,
                          finish_reasons: Sequence[str] = ()) -> dict[str, Any]:
    """The ``gen_ai.*`` attributes of one model call: this module's spans and the runtime's
    callAI block spans (chatflow.handlers.projections.spans) both use them."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": operation,
                                  "gen_ai.provider.name": provider_name(family),
                                  "gen_ai.request.model": model}
    if input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = input_tokens
    if output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = output_tokens
    if response_model:
        attributes["gen_ai.response.model"] = response_model
    if finish_reasons:
        attributes["gen_ai.response.finish_reasons"] = list(finish_reasons)
    return attributes


def tool_call_attributes(name: str, call_id: str = "") -> dict[str, Any]:
    """The ``gen_ai.*`` attributes of one tool call (``execute_tool {name}``)."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    return attributes


class OpenTelemetryHooks(RunHooks):
    """RunHooks that trace model calls and tool calls; pass ``tracer_provider`` to pick one."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer("chatflow_agent", tracer_provider=tracer_provider)
        self._model_spans: dict[int, Span] = {}
        self._tool_spans: dict[str, Span] = {}
        self._tool_tokens: dict[str, Any] = {}

    async def on_model_request(
        self, context: RunContext[Any], agent: Agent, messages: Sequence[Message]
    ) -> None:
        from .providers.registry import provider_family

        family = agent.provider.name if agent.provider is not None else provider_family(agent.model)
        span = self._tracer.start_span(
            f"chat {agent.model}",
            kind=SpanKind.CLIENT,
            attributes={
                **model_call_attributes("chat", family, agent.model),
                "gen_ai.agent.name": agent.name,
                "gen_ai.conversation.id": context.session_id,
            },
        )
        self._model_spans[id(context)] = span

    async def on_model_response(
        self, context: RunContext[Any], agent: Agent, reply: ModelReply
    ) -> None:
        span = self._model_spans.pop(id(context), None)
        if span is None:
            return
        span.set_attribute("gen_ai.usage.input_tokens", reply.usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", reply.usage.output_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason])
        span.end()

    async def on_tool_start(self, context: RunContext[Any], agent: Agent, call: ToolCall) -> None:
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes={**tool_call_attributes(call.name, call.id), "gen_ai.agent.name": agent.name},
        )
        self._tool_spans[call.id] = span
        # Current while the tool runs (the Runner awaits it in this task, after this hook):
        # a runtime tool's command or native call then carries this span as its parent.
        self._tool_tokens[call.id] = otel_context.attach(trace.set_span_in_context(span))

    async def on_tool_end(
        self, context: RunContext[Any], agent: Agent, call: ToolCall, result: ToolResult
    ) -> None:
        token = self._tool_tokens.pop(call.id, None)
        if token is not None:
            otel_context.detach(token)
        span = self._tool_spans.pop(call.id, None)
        if span is None:
            return
        if result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, result.content[:200]))
        span.end()

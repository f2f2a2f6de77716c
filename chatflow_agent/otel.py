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


class OpenTelemetryHooks(RunHooks):
    """RunHooks that trace model calls and tool calls; pass ``tracer_provider`` to pick one."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer("chatflow_agent", tracer_provider=tracer_provider)
        self._model_spans: dict[int, Span] = {}
        self._tool_spans: dict[str, Span] = {}

    async def on_model_request(
        self, context: RunContext[Any], agent: Agent, messages: Sequence[Message]
    ) -> None:
        from .providers.registry import provider_family

        family = agent.provider.name if agent.provider is not None else provider_family(agent.model)
        span = self._tracer.start_span(
            f"chat {agent.model}",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": _PROVIDER_NAMES.get(family, family),
                "gen_ai.request.model": agent.model,
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
        self._tool_spans[call.id] = self._tracer.start_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.agent.name": agent.name,
            },
        )

    async def on_tool_end(
        self, context: RunContext[Any], agent: Agent, call: ToolCall, result: ToolResult
    ) -> None:
        span = self._tool_spans.pop(call.id, None)
        if span is None:
            return
        if result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, result.content[:200]))
        span.end()

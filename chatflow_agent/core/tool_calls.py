"""Running one tool call of a model turn: lookup, arguments, timeout, hooks, result."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ToolArgumentsError, ToolExecutionError
from .context import RunContext, current_run_context
from .hooks import RunHooks
from .messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from .agent import Agent

logger = logging.getLogger("chatflow_agent.runner")


@dataclass(frozen=True)
class CallOutcome:
    result: ToolResult
    # False for calls that never reached a tool: unknown names, unreadable arguments.
    ran: bool


async def call_tool(
    agent: Agent, call: ToolCall, *, gemini: bool, context: RunContext[Any], hooks: RunHooks
) -> CallOutcome:
    """Run ``call``; every failure becomes an ``is_error`` result the model reads."""
    target = agent.tool_named(call.name)
    if target is None:
        known = ", ".join(t.name for t in agent.tools) or "none"
        content = f"Unknown tool {call.name!r}. Available tools: {known}."
        return CallOutcome(ToolResult(call.id, call.name, content, is_error=True), ran=False)
    if call.arguments_error is not None:
        failed = ToolResult(call.id, call.name, call.arguments_error, is_error=True)
        return CallOutcome(failed, ran=False)
    timeout = getattr(target, "timeout", None) or agent.tool_timeout
    await hooks.on_tool_start(context, agent, call)
    token = current_run_context.set(context)
    ran = True
    try:
        kwargs = target.bind_model_arguments(call.arguments, gemini=gemini)
        value = await asyncio.wait_for(target.execute_async(**kwargs), timeout)
    except ToolArgumentsError as exc:
        _log_failure(call, exc)
        result = ToolResult(call.id, call.name, str(exc), is_error=True)
        ran = False
    except ToolExecutionError as exc:
        _log_failure(call, exc)
        result = ToolResult(call.id, call.name, _error_text(exc), is_error=True)
    except TimeoutError as exc:
        # wait_for's own timeout: the tool (a thread, for a sync one) may still finish later.
        message = f"tool {call.name!r} did not finish within {timeout:g} s"
        _log_failure(call, exc, message)
        result = ToolResult(call.id, call.name, message, is_error=True)
    else:
        result = ToolResult.from_value(call.id, call.name, value)
        if result.is_error:
            _log_failure(call, None, result.content)
    finally:
        current_run_context.reset(token)
    await hooks.on_tool_end(context, agent, call, result)
    return CallOutcome(result, ran=ran)


def _log_failure(call: ToolCall, exc: BaseException | None, message: str | None = None) -> None:
    text = message or (str(exc) if exc is not None else "") or type(exc).__name__
    logger.warning(
        "tool call %s (%s) failed: %s",
        call.name,
        call.id,
        text,
        extra={"tool": call.name, "tool_call_id": call.id, "error": text},
    )


def _error_text(exc: ToolExecutionError) -> str:
    # The model reads this; the tool's own message says more than our wrapper.
    cause = exc.__cause__
    if not isinstance(cause, BaseException):
        return str(exc)
    return str(cause) or str(exc)

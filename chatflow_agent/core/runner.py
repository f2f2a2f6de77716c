"""The run loop: ask the model, run the tools it calls, feed results back, repeat."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import httpx

from ..errors import MaxTurnsExceeded, ToolArgumentsError, ToolExecutionError
from ..tools.execution import run_sync
from .agent import Agent
from .memory import SessionStore
from .messages import Message, ToolCall, ToolResult, UserMessage

logger = logging.getLogger("chatflow_agent.runner")


@dataclass
class RunResult:
    """The outcome of one user turn."""

    content: str | None
    tool_calls_executed: list[str] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list, repr=False)
    session_id: str = ""
    turns: int = 0

    def __str__(self) -> str:
        return self.content or ""


class Runner:
    """Runs an agent's turns and keeps each session's history in a SessionStore."""

    def __init__(
        self,
        starting_agent: Agent,
        session_store: SessionStore | None = None,
        *,
        timeout: float = 60.0,
    ) -> None:
        self.starting_agent = starting_agent
        self.session_store = session_store if session_store is not None else SessionStore()
        self.timeout = timeout

    def run(self, session_id: str, user_message: str) -> RunResult:
        """Run one user turn to the model's final answer; blocks until done."""
        return run_sync(self.run_async(session_id=session_id, user_message=user_message))

    async def run_async(self, session_id: str, user_message: str) -> RunResult:
        """Run one user turn to the model's final answer."""
        from ..providers.registry import provider_for_model

        agent = self.starting_agent
        provider = agent.provider or provider_for_model(agent.model)
        history = await self.session_store.load(session_id)
        new: list[Message] = [UserMessage(user_message)]
        result = RunResult(content=None, messages=new, session_id=session_id)
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            while True:
                if result.turns == agent.max_turns:
                    await self.session_store.append(session_id, new)
                    raise MaxTurnsExceeded(
                        f"agent {agent.name!r} still calling tools after {agent.max_turns} turns"
                    )
                reply = await provider.complete(agent, [*history, *new], client)
                result.turns += 1
                new.append(reply)
                if not reply.tool_calls:
                    break
                outcomes = await asyncio.gather(
                    *(
                        self._call_tool(agent, call, provider.gemini_dialect)
                        for call in reply.tool_calls
                    )
                )
                new.extend(outcomes)
                result.tool_calls_executed.extend(call.name for call in reply.tool_calls)
                result.tool_results.extend(outcomes)
        result.content = reply.content
        await self.session_store.append(session_id, new)
        return result

    async def _call_tool(self, agent: Agent, call: ToolCall, gemini: bool) -> ToolResult:
        target = agent.tool_named(call.name)
        if target is None:
            known = ", ".join(t.name for t in agent.tools) or "none"
            content = f"Unknown tool {call.name!r}. Available tools: {known}."
            return ToolResult(call.id, call.name, content, is_error=True)
        if call.arguments_error is not None:
            return ToolResult(call.id, call.name, call.arguments_error, is_error=True)
        try:
            kwargs = target.bind_model_arguments(call.arguments, gemini=gemini)
            value = await target.execute_async(**kwargs)
        except ToolExecutionError as exc:
            logger.warning("tool call failed", extra={"tool": call.name, "error": str(exc)})
            return ToolResult(call.id, call.name, _error_text(exc), is_error=True)
        return ToolResult.from_value(call.id, call.name, value)


def _error_text(exc: ToolExecutionError) -> str:
    # The model reads this; the tool's own message says more than our wrapper.
    cause = exc.__cause__
    if isinstance(exc, ToolArgumentsError) or not isinstance(cause, BaseException):
        return str(exc)
    return str(cause) or type(cause).__name__


__all__ = ["RunResult", "Runner"]

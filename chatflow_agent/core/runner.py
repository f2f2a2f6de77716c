"""The run loop: ask the model, run the tools it calls, feed results back, repeat."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import MaxTurnsExceeded, OutputValidationError, UsageLimitExceeded
from ..tools.execution import run_sync
from .agent import Agent
from .context import RunContext
from .durations import check_seconds
from .events import FinalEvent, StreamEvent, TextDelta, ToolCallEvent, ToolResultEvent
from .hooks import RunHooks
from .memory import SessionStore
from .messages import Message, ToolCall, ToolResult, UserMessage
from .output import FINAL_RESULT_TOOL
from .result import RunResult
from .tool_calls import CallOutcome, call_tool
from .usage import UsageLimits

if TYPE_CHECKING:
    from ..providers.base import ModelReply, Provider


class Runner:
    """Runs an agent's turns and keeps each session's history in a SessionStore."""

    def __init__(
        self,
        starting_agent: Agent,
        session_store: SessionStore | None = None,
        *,
        timeout: float = 60.0,
        hooks: RunHooks | None = None,
    ) -> None:
        self.starting_agent = starting_agent
        self.session_store = session_store if session_store is not None else SessionStore()
        self.timeout = check_seconds(timeout, "timeout")
        self.hooks = hooks if hooks is not None else RunHooks()

    def run(
        self,
        session_id: str,
        user_message: str,
        *,
        context: Any = None,
        hooks: RunHooks | None = None,
        usage_limits: UsageLimits | None = None,
        tool_choice: str | None = None,
    ) -> RunResult:
        """Run one user turn to the model's final answer; blocks until done.

        ``context`` reaches tools as ``RunContext.deps``; ``hooks`` replace the
        Runner's for this run; ``usage_limits`` and ``tool_choice`` replace the
        agent's for this run.
        """
        return run_sync(
            self.run_async(session_id, user_message, context=context, hooks=hooks,
                           usage_limits=usage_limits, tool_choice=tool_choice)
        )

    async def run_async(
        self,
        session_id: str,
        user_message: str,
        *,
        context: Any = None,
        hooks: RunHooks | None = None,
        usage_limits: UsageLimits | None = None,
        tool_choice: str | None = None,
    ) -> RunResult:
        """Run one user turn to the model's final answer."""
        return await self._run(
            session_id, user_message, context, hooks, None, usage_limits, tool_choice
        )

    async def run_streamed(
        self,
        session_id: str,
        user_message: str,
        *,
        context: Any = None,
        hooks: RunHooks | None = None,
        usage_limits: UsageLimits | None = None,
        tool_choice: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Run one user turn, yielding events as they happen; the last is ``final``.

        Model calls stream over the provider's server-sent events: ``text_delta``
        events carry the text as it comes, ``tool_call`` and ``tool_result``
        events frame each tool call. The stored history is the same as
        ``run_async`` stores. Leaving the loop early cancels the run.
        """
        queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
        task = asyncio.create_task(
            self._run(
                session_id, user_message, context, hooks, queue.put, usage_limits, tool_choice
            )
        )
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            yield FinalEvent(await task)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _run(
        self,
        session_id: str,
        user_message: str,
        context: Any,
        hooks: RunHooks | None,
        emit: Callable[[StreamEvent], Awaitable[None]] | None,
        usage_limits: UsageLimits | None = None,
        tool_choice: str | None = None,
    ) -> RunResult:
        from ..providers.registry import provider_for_model

        agent = self.starting_agent
        if tool_choice is not None:
            agent = agent.with_tool_choice(tool_choice)
        provider = agent.provider or provider_for_model(agent.model)
        history = await self.session_store.load(session_id)
        run = _Run(agent, provider, hooks or self.hooks, session_id, context, emit)
        run.limits = usage_limits if usage_limits is not None else agent.usage_limits
        run.new.append(UserMessage(user_message))
        async with contextlib.AsyncExitStack() as scopes:
            for toolset in agent.toolsets:
                scope = getattr(toolset, "run_scope", None)
                if scope is not None:
                    await scopes.enter_async_context(scope())
            client = await scopes.enter_async_context(httpx.AsyncClient(timeout=self.timeout))
            try:
                await run.loop(history, client)
            except (MaxTurnsExceeded, OutputValidationError, UsageLimitExceeded):
                await self.session_store.append(session_id, run.new)
                raise
        await self.session_store.append(session_id, run.new)
        return run.result


class _Run:
    """One run's state: the messages it adds and the result it builds."""

    def __init__(
        self,
        agent: Agent,
        provider: Provider,
        hooks: RunHooks,
        session_id: str,
        deps: Any,
        emit: Callable[[StreamEvent], Awaitable[None]] | None = None,
    ) -> None:
        self.emit = emit
        self.agent = agent
        self.provider = provider
        self.hooks = hooks
        self.new: list[Message] = []
        self.result = RunResult(content=None, messages=self.new, session_id=session_id)
        self.context: RunContext[Any] = RunContext(deps, session_id, self.result.usage)
        self.output_retried = False
        self.limits: UsageLimits | None = None

    async def loop(self, history: list[Message], client: httpx.AsyncClient) -> None:
        agent, result = self.agent, self.result
        while True:
            if result.turns == agent.max_turns:
                raise MaxTurnsExceeded(
                    f"agent {agent.name!r} still calling tools after {agent.max_turns} turns"
                )
            reply = await self.ask(history, client)
            if reply.is_empty:
                # A blocked or empty turn is reported, never stored: providers refuse
                # an empty turn, and storing one would break every later request.
                result.content = None
                return
            self.new.append(reply.message)
            final = [c for c in reply.message.tool_calls if c.name == FINAL_RESULT_TOOL]
            if reply.message.tool_calls and not (final and agent.output_schema is not None):
                await self.run_tools(reply)
                continue
            result.content = reply.message.content
            if agent.output_schema is None:
                result.output = result.content
                return
            if self.take_output(reply, final[0] if final else None):
                return

    def take_output(self, reply: ModelReply, final: ToolCall | None) -> bool:
        """Validate the final answer; on a first failure tell the model why and go on."""
        schema = self.agent.output_schema
        assert schema is not None
        gemini = self.provider.uses_gemini_dialect(self.agent)
        try:
            if final is not None:
                self.result.output = schema.validate_value(final.arguments, gemini=gemini)
            else:
                self.result.output = schema.validate_text(reply.message.content, gemini=gemini)
        except OutputValidationError as exc:
            feedback = f"{exc}. Answer again, fitting the required schema."
            self._answer_calls(reply, final, feedback)
            if final is None:
                self.new.append(UserMessage(feedback))
            if self.output_retried:
                raise OutputValidationError(
                    f"agent {self.agent.name!r}: {exc} (also after being told once)"
                ) from exc
            self.output_retried = True
            return False
        self._answer_calls(reply, final, None)
        return True

    def _answer_calls(self, reply: ModelReply, final: ToolCall | None, error: str | None) -> None:
        # Every tool_use needs its tool_result in the history, the final_result one too.
        for call in reply.message.tool_calls:
            if call is final:
                text = error or "Final answer received."
            else:
                text = "Not run: the final answer came in the same turn."
            is_error = call is not final or error is not None
            self.new.append(ToolResult(call.id, call.name, text, is_error=is_error))


    async def ask(self, history: list[Message], client: httpx.AsyncClient) -> ModelReply:
        messages = [*history, *self.new]
        if self.limits is not None:
            self.limits.check_before_request(self.result.usage)
        await self.hooks.on_model_request(self.context, self.agent, messages)
        if self.emit is None:
            reply = await self.provider.complete(self.agent, messages, client)
        else:
            reply = await self.provider.stream(self.agent, messages, client, self._text)
        self.result.turns += 1
        self.result.usage.add(reply.usage)
        if self.limits is not None:
            self.limits.check_tokens(self.result.usage)
        self.result.finish_reason = reply.finish_reason
        await self.hooks.on_model_response(self.context, self.agent, reply)
        return reply

    async def _text(self, delta: str) -> None:
        if self.emit is not None:
            await self.emit(TextDelta(delta))

    async def run_tools(self, reply: ModelReply) -> None:
        outcomes = await asyncio.gather(*(self._call(call) for call in reply.message.tool_calls))
        self.new.extend(outcome.result for outcome in outcomes)
        self.result.tool_calls_executed.extend(o.result.name for o in outcomes if o.ran)
        self.result.tool_results.extend(outcome.result for outcome in outcomes)

    async def _call(self, call: ToolCall) -> CallOutcome:
        if self.emit is not None:
            await self.emit(ToolCallEvent(call))
        gemini = self.provider.uses_gemini_dialect(self.agent)
        outcome = await call_tool(
            self.agent, call, gemini=gemini, context=self.context, hooks=self.hooks
        )
        if self.emit is not None:
            await self.emit(ToolResultEvent(outcome.result))
        return outcome


__all__ = ["RunResult", "Runner"]

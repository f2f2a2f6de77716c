"""The tool state machine, as pure code: ``(state, outcome) -> Transition``.

Nothing here touches Redis, the network or the clock: the caller passes ``now``
(epoch ms), fresh ids and whatever a block executor produced. The handlers
commit a Transition atomically (state writes, next steps, emitted messages)
with the ack of the step that produced it.

A callTool tree runs one execution at a time (the parent waits for its
child), so the tree-wide counters (invocations) travel with the active
execution and come back to the parent with the child's outcome.

The machine never changes a state it is given: each public method advances its own
copy (``_own``) and returns it in the Transition's ``writes``. The machine decides one
step; carrying a transition on within the same hop (returns, guardrails, inert blocks,
waiting parents) is runtime/runahead.py's.
"""

from __future__ import annotations

from typing import Any

import msgspec

from chatflow.schemas.definition import (
    CallToolBlock,
    PublishedTool,
    ReturnBlock,
    RunnableBlock,
    ToolDefinition,
    UnknownBlock,
)
from chatflow.schemas.wire import ErrorInfo, ExecuteToolCommand

from . import errors, retry
from .conditions import pick_target
from .errors import ToolFailure
from .events import (
    block_debug,
    debug_emit,
    execution_emit,
    recordable_command_context,
    result_emit,
    tool_result,
)
from .interpolation import RenderTooLarge, render
from .limits import Limits, json_size, variables_too_large
from .outcome import BlockOutcome, SpawnChild
from .state import (
    Attempt,
    ChildOutcome,
    ExecState,
    Frame,
    LogEntry,
    RootInfo,
    StepMsg,
    Transition,
)

# A block that fails this close to the tree's deadline was cut short by it: its timer was
# armed with the remaining time, read in whole milliseconds, and may fire a hair early.
DEADLINE_SLACK_MS = 5


def _err(failure: ToolFailure) -> ErrorInfo:
    return ErrorInfo(failure.code, failure.message)


def variables_of(state: ExecState) -> tuple[dict[str, Any], dict[str, Any]]:
    return state.variables, state.context


# A copy of a state for one call to advance. Shallow on purpose: ``variables`` is rebound,
# never updated in place, and ``frames``, ``context`` and ``root`` are never changed, so
# sharing them with the caller's state is safe and copies no large dict. msgspec's own
# function, not a wrapper: it runs four times per one-hop execution.
_own = msgspec.structs.replace


class Machine:
    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    # -- start ---------------------------------------------------------------

    def start(
        self,
        cmd: ExecuteToolCommand,
        published: PublishedTool | ToolFailure,
        def_hash: str,
        def_bytes: bytes,
        *,
        exec_id: str,
        partition: int,
        now: int,
        debug: bool,
        traceparent: str = "",
        tracestate: str = "",
    ) -> Transition:
        """``traceparent``/``tracestate``: the command's trace context as the intake accepted
        it (empty: none, or tracing is off); kept in the tree's RootInfo and, when given, in
        its ``started`` entry, where the tracing projection reads it."""
        ctx = cmd.context
        context = {"router": ctx.router, "flow": ctx.flow,
                   "contact": {"id": ctx.contactId, **ctx.contact}}
        try:
            inputs = {m.name: render(m.value, ctx.variables, context,
                                     max_chars=self.limits.max_rendered_chars)
                      for m in cmd.action.inputVariables}
        except RenderTooLarge as exc:  # an input bomb: this command's error, not the batch's
            inputs, published = {}, errors.render_too_large(f"inputVariables: {exc}")
        if not isinstance(published, ToolFailure) and published.forCommand not in (None, cmd.commandId):
            # A record made for one command (a fork's) starts for that command only; the
            # commandId guard makes that one execution (runtime/tenancy.py).
            published = errors.tool_not_found(cmd.action.publishedToolId)
        workspace = "default" if isinstance(published, ToolFailure) else published.workspace
        root = RootInfo(cmd.commandId, cmd.action, cmd.replyTo, inputs, ctx.contactId,
                        ctx.variables, context, now, workspace, traceparent, tracestate)
        pt = cmd.action.publishedToolId
        # Positional, in field order (see ExecState): msgspec matches a keyword against
        # every field name, which costs four times the struct itself for this many fields.
        state = ExecState(exec_id, exec_id, partition, 0, cmd.action.toolId, pt, def_hash, "",
                          {**ctx.variables, **inputs}, context, root, now,
                          now + self.limits.tool_timeout_ms, debug)
        t = Transition()
        if debug:
            t.emits.append(debug_emit(state, "action_start", "executeTool",
                                      {"toolId": state.toolId, "publishedToolId": pt,
                                       "inputs": inputs}, now))
        if isinstance(published, ToolFailure) or not published.definition.onboardingBlockId:
            # Ended before its first block, it still started: the contact and inputs it was
            # asked with are recorded (the run history files it under its contact).
            t.log.append(LogEntry("started", exec_id, now, detail={
                "publishedToolId": pt, "inputs": inputs,
                "context": recordable_command_context(context)}))
            failure = (published if isinstance(published, ToolFailure)
                       else errors.tool_not_published(pt))
            return self._finish(state, "", failure, now, t)
        state.toolId = published.toolId or state.toolId
        state.block = published.definition.onboardingBlockId
        t.definitions[def_hash] = def_bytes
        detail = {"publishedToolId": pt, "inputs": inputs, "defHash": def_hash,
                  "variables": state.variables, "context": recordable_command_context(context)}
        if workspace != "default":  # the tree's workspace, for readers of its log alone
            detail["workspace"] = workspace
        if traceparent:
            detail["traceparent"] = traceparent
            if tracestate:
                detail["tracestate"] = tracestate
        t.log.append(LogEntry("started", exec_id, now, blockId=state.block, detail=detail))
        return self._continue(state, t)

    # -- one step --------------------------------------------------------------

    def plan(self, state: ExecState, definition: ToolDefinition, now: int, *,
             into: Transition | None = None) -> RunnableBlock | Transition:
        """The block to run next, or the Transition when a guardrail ends the run first.
        Only an ending copies the state: planning a block to run (the usual case, and what
        run-ahead asks of every step) reads it and nothing more.

        ``into``: a transition being built (run-ahead's), to add the decision to instead of a
        new one; it is returned then, and its ``expect`` stays the caller's. (A fatal failure
        still returns a transition of its own: see ``_finish``.)"""
        if now > state.deadlineMs:
            return self._abort(_own(state), errors.tool_timeout(
                state.root.action.publishedToolId, self.limits.tool_timeout_ms), now, into)
        block = definition.blocks.get(state.block)
        if block is None:
            return self._fail(_own(state), errors.tool_block_invalid(state.block, state.publishedToolId),
                              now, into)
        # ``type() is``, not isinstance: a block is its model's own class (never a subclass),
        # and isinstance against a pydantic model class that does not match runs ABCMeta's
        # __instancecheck__ in Python, on every plan.
        if type(block) is UnknownBlock:
            return self._fail(_own(state), errors.tool_block_type_unknown(
                state.publishedToolId, state.block, block.type), now, into)
        if state.hops >= self.limits.max_hops:
            return self._fail(_own(state), errors.tool_loop(state.publishedToolId, self.limits.max_hops),
                              now, into)
        if type(block) is ReturnBlock:
            try:
                value = render(block.value, state.variables, state.context,
                               max_chars=self.limits.max_rendered_chars)
            except RenderTooLarge as exc:  # run-ahead plans too: a bomb must not fail the batch
                return self._fail(_own(state), errors.render_too_large(exc), now, into)
            t = Transition((state.execId, state.version)) if into is None else into
            if state.debug:
                t.emits.append(block_debug(state, block.id, "return", {"result": value}, None,
                                           None, 0, now))
            t.log.append(LogEntry("block", state.execId, now, blockId=block.id,
                                  blockType="return", durationMs=0, ok=True, result=value))
            return self._finish(_own(state), value, None, now, t)
        return block  # type: ignore[return-value]  # neither unknown nor return (see above)

    def after_block(
        self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome, now: int,
        attempts: list[Attempt] | None = None, since: int = 0,
    ) -> Transition:
        """``attempts``/``since``: what a retry's step carried (the attempts before this
        one, and when the last ended); see ``_attempted``."""
        if outcome.retry is not None:
            attempted = self._attempted(state, block, outcome, now, attempts, since)
            if isinstance(attempted, Transition):
                return attempted
            outcome = attempted
        return self._after_block(_own(state), block, outcome, now)

    def _attempted(self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome,
                   now: int, prior: list[Attempt] | None,
                   since: int) -> BlockOutcome | Transition:
        """An attempt of a block with a retry policy: the transition that waits for the
        next attempt (a step delayed in Valkey, nothing else written: the state is the one
        this attempt started from), or the outcome to go on with, carrying every attempt
        and, when more than one was made or the deadline stopped them, their count in the
        error's message (runtime/retry.py decides)."""
        policy = outcome.retry
        assert policy is not None
        found = outcome.debug.get("status") if outcome.debug else None
        status = found if type(found) is int else None
        failure = outcome.error
        wait = max(0, now - outcome.duration_ms - since) if prior else 0
        history = [*(prior or ()), retry.attempt_of(status, failure, outcome.duration_ms, wait)]
        if (failure is not None and not failure.fatal
                and now + DEADLINE_SLACK_MS < state.deadlineMs):
            decision = retry.decide(
                policy, attempts_made=len(history), kind=retry.classify(status, failure.code),
                retry_after=retry.retry_after_ms(outcome.retry_after, now), now_ms=now,
                deadline_ms=state.deadlineMs,
                jitter=retry.jitter_of(state.execId, block.id, state.hops, len(history)))
            if isinstance(decision, retry.Retry):
                t = Transition((state.execId, state.version))
                t.delayed.append((now + decision.wait_ms, StepMsg(
                    state.execId, state.version, attempts=history, since=now)))
                return t
            if len(history) > 1 or decision.reason == "deadline":
                failure = retry.gave_up(failure, len(history), decision.reason)
        debug = {**outcome.debug, "attempts": msgspec.to_builtins(history)}
        return BlockOutcome(outcome.writes, failure, debug, outcome.duration_ms, outcome.emits)

    def _after_block(
        self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome, now: int,
        into: Transition | None = None, *, merged: bool = False,
    ) -> Transition:
        """``merged``: the caller has set ``state.variables`` with ``outcome.writes``."""
        t = Transition((state.execId, state.version)) if into is None else into
        if outcome.writes and not merged:  # a new dict: the caller's state keeps its own
            state.variables = {**state.variables, **outcome.writes}
        if outcome.emits:
            t.emits.extend(outcome.emits)
        failure = outcome.error
        if failure is not None and not failure.fatal and now + DEADLINE_SLACK_MS >= state.deadlineMs:
            # A block's own timeout is capped at the tree's remaining time: when that cap is
            # what cut it short, the answer is the tree's timeout, whatever onError says.
            failure = errors.tool_timeout(state.root.action.publishedToolId,
                                          self.limits.tool_timeout_ms)
        if failure is not None and (failure.fatal or block.onError == "blocking"):
            self._log_block(state, block, outcome, None, t, now)
            return self._finish(state, "", failure, now, t)
        if failure is not None and block.errorVariable:
            state.variables = {**state.variables, block.errorVariable: failure.message}
        return self._navigate(state, block, outcome, now, t)

    def after_run(self, state: ExecState, block: RunnableBlock,
                  result: BlockOutcome | SpawnChild | ToolFailure, now: int,
                  attempts: list[Attempt] | None = None, since: int = 0) -> Transition:
        """The transition for what running ``block`` gave (``BlockRunner.run``): its outcome,
        the child a callTool asks for, or a failure to run it at all, which for a callTool is
        a child that could not be loaded (onError applies) and for any other block a kind
        this runtime cannot run (the tool fails, whatever onError says)."""
        if isinstance(result, SpawnChild):
            assert isinstance(block, CallToolBlock)  # only a callTool spawns
            return self.spawn(state, block, result, now)
        if isinstance(result, ToolFailure):
            if isinstance(block, CallToolBlock):
                return self.load_failure(state, block, result, now)
            return self.fail(state, result, now)
        return self.after_block(state, block, result, now, attempts, since)

    def spawn(self, state: ExecState, block: CallToolBlock, req: SpawnChild, now: int) -> Transition:
        """Start a child execution for a callTool block, after the per-invocation guardrails."""
        state = _own(state)
        guard = self._spawn_guard(state, block.publishedToolId)
        if guard is not None:
            return self._after_block(state, block, BlockOutcome(error=guard), now)
        child_id = f"{state.execId}.{state.version}"
        frames = [*state.frames, Frame(state.execId, state.toolId, state.publishedToolId,
                                       state.startedMs)]
        definition = req.published.definition
        # Positional, in field order (see ExecState, and ``start``): execId, rootId,
        # partition, depth, toolId, publishedToolId, defHash, block, variables, context, root,
        # startedMs, deadlineMs, debug, frames, hops, invocations.
        child = ExecState(child_id, state.rootId, state.partition, state.depth + 1,
                          req.published.toolId or block.toolId, block.publishedToolId,
                          req.def_hash, definition.onboardingBlockId or "",
                          {**state.variables, **req.inputs}, state.context, state.root, now,
                          state.deadlineMs, state.debug, frames, 0, state.invocations + 1)
        t = Transition((state.execId, state.version))
        state.status, state.waitingOn = "waiting", block.id
        state.version += 1
        t.writes.append(state)
        t.definitions[req.def_hash] = req.def_bytes
        t.log.append(LogEntry("spawned", state.execId, now, blockId=block.id, child=child_id))
        t.log.append(LogEntry("started", child_id, now, blockId=child.block,
                              detail={"publishedToolId": child.publishedToolId,
                                      "parent": state.execId, "inputs": req.inputs,
                                      "defHash": req.def_hash, "variables": child.variables}))
        if not definition.onboardingBlockId:
            return self._finish(child, "", errors.tool_not_published(block.publishedToolId), now, t)
        return self._continue(child, t)

    def after_child(self, state: ExecState, definition: ToolDefinition, child: ChildOutcome,
                    now: int, *, into: Transition | None = None) -> Transition:
        """The parent's transition once its child ended (``into``: as ``plan``'s)."""
        block = definition.blocks[state.waitingOn or ""]
        assert isinstance(block, CallToolBlock)  # only a callTool block waits on a child
        state = _own(state)
        state.status, state.waitingOn = "running", None
        state.invocations = max(state.invocations, child.invocations)
        # A child's result enters the parent's variables here, not through the block runner:
        # the same cap on the execution's variables applies (CHATFLOW_VARIABLES_MAX_BYTES).
        # The outcome's fields are all given: a dataclass default factory is a call each.
        if child.ok:
            writes = {block.outputVariable: child.result}
            merged = {**state.variables, **writes}
            over = variables_too_large(json_size(merged), self.limits.variables_max_bytes)
            if over is None:
                state.variables = merged  # what ``_after_block`` would merge: merged once
                outcome = BlockOutcome(writes, None, {"result": child.result}, child.durationMs,
                                       [])
                return self._after_block(state, block, outcome, now, into, merged=True)
            outcome = BlockOutcome({block.outputVariable: ""}, over, {}, child.durationMs, [])
        else:
            error = child.error or _err(errors.internal_error("child failed without an error"))
            # The child's failure is this callTool block's, so its onError applies: never
            # fatal here (a fatal one ended the whole tree and never reaches a parent).
            outcome = BlockOutcome({block.outputVariable: ""},
                                   ToolFailure(error.code, error.message), {},
                                   child.durationMs, [])
        return self._after_block(state, block, outcome, now, into)

    def load_failure(self, state: ExecState, block: CallToolBlock, failure: ToolFailure,
                     now: int) -> Transition:
        """A callTool whose child could not be loaded fails like any block (onError applies)."""
        guard = self._spawn_guard(state, block.publishedToolId)
        return self._after_block(_own(state), block, BlockOutcome(error=guard or failure), now)

    def abort(self, state: ExecState, failure: ToolFailure, now: int) -> Transition:
        """End the whole tree now (deadline, cancellation): the root answers at once."""
        return self._abort(_own(state), failure, now)

    def _abort(self, state: ExecState, failure: ToolFailure, now: int,
               into: Transition | None = None) -> Transition:
        t = Transition((state.execId, state.version)) if into is None else into
        state.status = "done"
        state.version += 1
        t.writes.append(state)
        t.done.append(state.execId)
        t.log.append(LogEntry("aborted", state.execId, now, ok=False, error=_err(failure)))
        # frames run root first, so a frame's index is its depth (the leaf's is state.depth)
        for depth, frame in enumerate([*state.frames, Frame(state.execId, state.toolId,
                                                            state.publishedToolId,
                                                            state.startedMs)]):
            ghost = ExecState(
                execId=frame.execId, rootId=state.rootId, partition=state.partition,
                depth=depth, toolId=frame.toolId, publishedToolId=frame.publishedToolId,
                defHash="", block="", variables={}, context={}, root=state.root,
                startedMs=frame.startedMs, deadlineMs=state.deadlineMs)
            t.emits.append(execution_emit(ghost, False, _err(failure), now))
        return self._answer(state, "", _err(failure), now, t)

    # -- internals -------------------------------------------------------------

    def _spawn_guard(self, state: ExecState, child_pt: str) -> ToolFailure | None:
        # The chain's names compared in place: the list ``state.chain`` builds is for the error.
        if child_pt == state.publishedToolId or (state.frames and any(
                f.publishedToolId == child_pt for f in state.frames)):
            return errors.tool_cycle([*state.chain, child_pt])
        if state.depth + 1 > self.limits.max_depth:
            return errors.tool_depth(self.limits.max_depth)
        if state.invocations + 1 > self.limits.max_invocations:
            return errors.tool_invocations(self.limits.max_invocations)
        return None

    def _navigate(self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome, now: int,
                  t: Transition) -> Transition:
        if block.outputConditions:
            notes: list[str] = []  # why regex rules were false other than by not matching
            target, matched = pick_target(block.outputConditions, block.defaultOutput,
                                          state.variables, state.context,
                                          max_text_bytes=self.limits.regex_max_text_bytes,
                                          notes=notes)
            reason = "; ".join(notes) or None
        else:  # the usual block: no condition to weigh, its default output
            target, matched, reason = block.defaultOutput, None, None
        nxt = target.blockId if target.type == "block" else f"@{target.type}"
        self._log_block(state, block, outcome, matched, t, now, nxt, reason)
        if target.type != "block":
            return self._finish(state, "", None, now, t)
        state.block = target.blockId or ""
        state.hops += 1
        return self._continue(state, t)

    def _log_block(self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome,
                   matched: str | None, t: Transition, now: int, nxt: str | None = None,
                   reason: str | None = None) -> None:
        error = outcome.error
        debug = outcome.debug
        # No comprehension or copy for what is empty: most blocks log no detail, and a
        # child's outcome has its result alone.
        detail = (({k: v for k, v in debug.items() if k != "result"} or None)
                  if debug and (len(debug) > 1 or "result" not in debug) else None)
        t.log.append(LogEntry(
            "block", state.execId, now, blockId=block.id, blockType=block.type,
            durationMs=outcome.duration_ms, ok=error is None,
            error=_err(error) if error else None, matchedConditionId=matched, next=nxt,
            detail=detail, writes=dict(outcome.writes) if outcome.writes else None))
        if state.debug:
            t.emits.append(block_debug(state, block.id, block.type, outcome.debug,
                                       error.message if error else None, matched,
                                       outcome.duration_ms, now, reason))

    def _continue(self, state: ExecState, t: Transition) -> Transition:
        state.status = "running"
        state.version += 1
        t.writes.append(state)
        t.steps.append(StepMsg(state.execId, state.version))
        return t

    def fail(self, state: ExecState, failure: ToolFailure, now: int) -> Transition:
        """End this tool with ``failure``, whatever the block's onError says."""
        return self._fail(_own(state), failure, now)

    def _fail(self, state: ExecState, failure: ToolFailure, now: int,
              into: Transition | None = None) -> Transition:
        t = Transition((state.execId, state.version)) if into is None else into
        return self._finish(state, "", failure, now, t)

    def _finish(self, state: ExecState, result: str, failure: ToolFailure | None, now: int,
                t: Transition) -> Transition:
        if failure is not None and failure.fatal:
            return self._abort(state, failure, now)
        error = _err(failure) if failure else None
        state.status = "done"
        state.version += 1
        t.writes.append(state)
        t.done.append(state.execId)
        t.emits.append(execution_emit(state, error is None, error, now))
        t.log.append(LogEntry("finished", state.execId, now, ok=error is None, error=error,
                              result=result if error is None else None))
        if state.depth > 0:
            parent = state.frames[-1].execId
            outcome = ChildOutcome(state.execId, error is None, result, error, state.invocations,
                                   max(0, now - state.startedMs))
            # The parent has waited at the version its spawn wrote, never bumped since.
            t.steps.append(StepMsg(parent, _parent_version(state), "resume", outcome))
            return t
        return self._answer(state, result, error, now, t)

    def _answer(self, state: ExecState, result: str, error: ErrorInfo | None, now: int,
                t: Transition) -> Transition:
        res = tool_result(state.root, execution_id=state.rootId, result=result, error=error,
                          now=now)
        t.finishes_root = True
        t.emits.append(result_emit(state.root, res))
        if state.debug:
            payload: dict[str, Any] = {"inputs": state.root.inputs}
            if error is None:
                payload["result"] = result
            else:
                payload["error"] = {"code": error.code, "message": error.message}
            t.emits.append(debug_emit(state, "action_result", "executeTool", payload, now))
        return t


def _parent_version(child: ExecState) -> int:
    """The version of the parent's waiting state, encoded in the child's id."""
    return int(child.execId.rsplit(".", 1)[1]) + 1

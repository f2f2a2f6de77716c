"""The tool state machine, as pure code: ``(state, outcome) -> Transition``.

Nothing here touches Redis, the network or the clock: the caller passes ``now``
(epoch ms), fresh ids and whatever a block executor produced. The handlers
commit a Transition atomically (state writes, next steps, emitted messages)
with the ack of the step that produced it.

A callTool tree runs one execution at a time (the parent waits for its
child), so the tree-wide counters (invocations) travel with the active
execution and come back to the parent with the child's outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatflow.schemas.definition import (
    CallToolBlock,
    PublishedTool,
    ReturnBlock,
    RunnableBlock,
    ToolDefinition,
    UnknownBlock,
)
from chatflow.schemas.wire import ExecuteToolCommand, ToolError

from . import errors
from .conditions import pick_target
from .errors import ToolFailure
from .events import (
    block_debug,
    debug_emit,
    execution_emit,
    recordable_context,
    result_emit,
    tool_result,
)
from .interpolation import RenderTooLarge, render
from .limits import Limits
from .outcome import BlockOutcome, SpawnChild
from .state import ChildOutcome, ExecState, Frame, LogEntry, RootInfo, StepMsg, Transition

# Blocks with no effect outside the runtime: a script in a V8 sandbox with no host access,
# and a callTool, whose only I/O reads the child's definition. Running one again after a
# crash changes nothing outside, so a handler may run it in whichever hop reaches it.
INERT_BLOCKS = frozenset({"executeScript", "callTool"})
# A block that fails this close to the tree's deadline was cut short by it: its timer was
# armed with the remaining time, read in whole milliseconds, and may fire a hair early.
DEADLINE_SLACK_MS = 5


def _err(failure: ToolFailure) -> ToolError:
    return ToolError(failure.code, failure.message)


def variables_of(state: ExecState) -> tuple[dict[str, Any], dict[str, Any]]:
    return state.variables, state.context


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
    ) -> Transition:
        ctx = cmd.context
        context = {"router": ctx.router, "flow": ctx.flow,
                   "contact": {"id": ctx.contactId, **ctx.contact}}
        try:
            inputs = {m.name: render(m.value, ctx.variables, context,
                                     max_chars=self.limits.max_rendered_chars)
                      for m in cmd.action.inputVariables}
        except RenderTooLarge as exc:  # an input bomb: this command's error, not the batch's
            inputs, published = {}, ToolFailure("render_too_large", f"inputVariables: {exc}")
        root = RootInfo(cmd.commandId, cmd.action, cmd.replyTo, inputs, ctx.contactId,
                        ctx.variables, context, now)
        pt = cmd.action.publishedToolId
        state = ExecState(
            execId=exec_id, rootId=exec_id, partition=partition, depth=0,
            toolId=cmd.action.toolId, publishedToolId=pt, defHash=def_hash, block="",
            variables={**ctx.variables, **inputs}, context=context, root=root,
            startedMs=now, deadlineMs=now + self.limits.tool_timeout_ms, debug=debug,
        )
        t = Transition()
        if debug:
            t.emits.append(debug_emit(state, "action_start", "executeTool",
                                      {"toolId": state.toolId, "publishedToolId": pt,
                                       "inputs": inputs}, now))
        if isinstance(published, ToolFailure):
            return self._finish(state, "", published, now, t)
        if not published.definition.onboardingBlockId:
            return self._finish(state, "", errors.tool_not_published(pt), now, t)
        state.toolId = published.toolId or state.toolId
        state.block = published.definition.onboardingBlockId
        t.definitions[def_hash] = def_bytes
        t.log.append(LogEntry("started", exec_id, now, blockId=state.block,
                              detail={"publishedToolId": pt, "inputs": inputs, "defHash": def_hash,
                                      "variables": state.variables,
                                      "context": recordable_context(context)}))
        return self._continue(state, t)

    # -- one step --------------------------------------------------------------

    def plan(self, state: ExecState, definition: ToolDefinition, now: int) -> RunnableBlock | Transition:
        """The block to run next, or the Transition when a guardrail ends the run first."""
        if now > state.deadlineMs:
            return self.abort(state, errors.tool_timeout(
                state.root.action.publishedToolId, self.limits.tool_timeout_ms), now)
        block = definition.blocks.get(state.block)
        if block is None:
            return self._fail(state, errors.tool_block_invalid(state.block, state.publishedToolId),
                              now)
        if isinstance(block, UnknownBlock):
            return self._fail(state, errors.tool_block_type_unknown(
                state.publishedToolId, state.block, block.type), now)
        if state.hops >= self.limits.max_hops:
            return self._fail(state, errors.tool_loop(state.publishedToolId, self.limits.max_hops),
                              now)
        if isinstance(block, ReturnBlock):
            try:
                value = render(block.value, state.variables, state.context,
                               max_chars=self.limits.max_rendered_chars)
            except RenderTooLarge as exc:  # settle() plans too: a bomb must not fail the batch
                return self._fail(state, ToolFailure("render_too_large", str(exc)), now)
            t = Transition(expect=(state.execId, state.version))
            if state.debug:
                t.emits.append(block_debug(state, block.id, "return", {"result": value}, None,
                                           None, 0, now))
            t.log.append(LogEntry("block", state.execId, now, blockId=block.id,
                                  blockType="return", durationMs=0, ok=True, result=value))
            return self._finish(state, value, None, now, t)
        return block

    def after_block(
        self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome, now: int
    ) -> Transition:
        t = Transition(expect=(state.execId, state.version))
        state.variables.update(outcome.writes)
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
            state.variables[block.errorVariable] = failure.message
        return self._navigate(state, block, outcome, now, t)

    def spawn(self, state: ExecState, block: CallToolBlock, req: SpawnChild, now: int) -> Transition:
        """Start a child execution for a callTool block, after the per-invocation guardrails."""
        guard = self._spawn_guard(state, block.publishedToolId)
        if guard is not None:
            return self.after_block(state, block, BlockOutcome(error=guard), now)
        child_id = f"{state.execId}.{state.version}"
        frames = [*state.frames, Frame(state.execId, state.toolId, state.publishedToolId,
                                       state.startedMs)]
        definition = req.published.definition
        child = ExecState(
            execId=child_id, rootId=state.rootId, partition=state.partition,
            depth=state.depth + 1, toolId=req.published.toolId or block.toolId,
            publishedToolId=block.publishedToolId, defHash=req.def_hash,
            block=definition.onboardingBlockId or "",
            variables={**state.variables, **req.inputs}, context=state.context, root=state.root,
            startedMs=now, deadlineMs=state.deadlineMs, debug=state.debug, frames=frames,
            invocations=state.invocations + 1,
        )
        t = Transition(expect=(state.execId, state.version))
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
                    now: int) -> Transition:
        block = definition.blocks[state.waitingOn or ""]
        assert isinstance(block, CallToolBlock)  # only a callTool block waits on a child
        state.status, state.waitingOn = "running", None
        state.invocations = max(state.invocations, child.invocations)
        if child.ok:
            outcome = BlockOutcome(writes={block.outputVariable: child.result},
                                   debug={"result": child.result}, duration_ms=child.durationMs)
        else:
            error = child.error or ToolError("internal_error", "child failed without an error")
            outcome = BlockOutcome(writes={block.outputVariable: ""},
                                   error=ToolFailure(error.code, error.message),
                                   duration_ms=child.durationMs)
        return self.after_block(state, block, outcome, now)

    def load_failure(self, state: ExecState, block: CallToolBlock, failure: ToolFailure,
                     now: int) -> Transition:
        """A callTool whose child could not be loaded fails like any block (onError applies)."""
        guard = self._spawn_guard(state, block.publishedToolId)
        return self.after_block(state, block, BlockOutcome(error=guard or failure), now)

    def abort(self, state: ExecState, failure: ToolFailure, now: int) -> Transition:
        """End the whole tree now (deadline, cancellation): the root answers at once."""
        t = Transition(expect=(state.execId, state.version))
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

    def resume_inline(self, t: Transition, parent: ExecState, definition: ToolDefinition,
                      now: int) -> Transition:
        """Fold a child's ``resume`` step for ``parent`` into ``t``: the parent continues in
        the same commit, guarded by its own version, instead of after another stream hop."""
        for i, step in enumerate(t.steps):
            if (step.kind == "resume" and step.exec_id == parent.execId and step.child is not None
                    and parent.version == step.version and parent.status == "waiting"):
                return _fuse(t, i, self.after_child(parent, definition, step.child, now))
        return t

    def settle(self, t: Transition, definitions: Callable[[str], ToolDefinition | None],
               now: int) -> Transition:
        """Run ahead: a next block that needs no I/O (a return, or a guardrail that ends
        the tool) is decided inside this transition instead of costing a stream hop.
        Each block still gets its own log entry and debug event."""
        for _ in range(self.limits.max_hops + 1):
            for i, step in enumerate(t.steps):
                state = _running(t, step)
                if state is None:
                    continue
                definition = definitions(state.defHash)
                planned = self.plan(state, definition, now) if definition else None
                if isinstance(planned, Transition):
                    t = _fuse(t, i, planned)
                    break
            else:
                return t
        return t

    def next_inert_block(self, t: Transition, definitions: Callable[[str], ToolDefinition | None],
                         now: int) -> tuple[int, ExecState, RunnableBlock] | None:
        """The first run step of ``t`` whose next block is inert (``INERT_BLOCKS``), with its
        state. The caller runs that block (it needs I/O, so it cannot happen here) and folds
        the outcome back in with ``fold``: how such blocks run inside the current hop."""
        for i, step in enumerate(t.steps):
            state = _running(t, step)
            definition = definitions(state.defHash) if state is not None else None
            if state is None or definition is None:
                continue
            planned = self.plan(state, definition, now)
            if not isinstance(planned, Transition) and planned.type in INERT_BLOCKS:
                return i, state, planned
        return None

    def fold(self, t: Transition, index: int, outcome: Transition) -> Transition:
        """``t`` with its step ``index`` replaced by ``outcome``, the transition that step made."""
        return _fuse(t, index, outcome)

    # -- internals -------------------------------------------------------------

    def _spawn_guard(self, state: ExecState, child_pt: str) -> ToolFailure | None:
        if child_pt in state.chain:
            return errors.tool_cycle([*state.chain, child_pt])
        if state.depth + 1 > self.limits.max_depth:
            return errors.tool_depth(self.limits.max_depth)
        if state.invocations + 1 > self.limits.max_invocations:
            return errors.tool_invocations(self.limits.max_invocations)
        return None

    def _navigate(self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome, now: int,
                  t: Transition) -> Transition:
        target, matched = pick_target(block.outputConditions, block.defaultOutput,
                                      state.variables, state.context)
        nxt = target.blockId if target.type == "block" else f"@{target.type}"
        self._log_block(state, block, outcome, matched, t, now, nxt)
        if target.type != "block":
            return self._finish(state, "", None, now, t)
        state.block = target.blockId or ""
        state.hops += 1
        return self._continue(state, t)

    def _log_block(self, state: ExecState, block: RunnableBlock, outcome: BlockOutcome,
                   matched: str | None, t: Transition, now: int, nxt: str | None = None) -> None:
        error = outcome.error
        t.log.append(LogEntry(
            "block", state.execId, now, blockId=block.id, blockType=block.type,
            durationMs=outcome.duration_ms, ok=error is None,
            error=_err(error) if error else None, matchedConditionId=matched, next=nxt,
            detail={k: v for k, v in outcome.debug.items() if k != "result"} or None,
            writes=dict(outcome.writes) or None))
        if state.debug:
            t.emits.append(block_debug(state, block.id, block.type, outcome.debug,
                                       error.message if error else None, matched,
                                       outcome.duration_ms, now))

    def _continue(self, state: ExecState, t: Transition) -> Transition:
        state.status = "running"
        state.version += 1
        t.writes.append(state)
        t.steps.append(StepMsg(state.execId, state.version))
        return t

    def fail(self, state: ExecState, failure: ToolFailure, now: int) -> Transition:
        """End this tool with ``failure``, whatever the block's onError says."""
        return self._fail(state, failure, now)

    def _fail(self, state: ExecState, failure: ToolFailure, now: int) -> Transition:
        t = Transition(expect=(state.execId, state.version))
        return self._finish(state, "", failure, now, t)

    def _finish(self, state: ExecState, result: str, failure: ToolFailure | None, now: int,
                t: Transition) -> Transition:
        if failure is not None and failure.fatal:
            return self.abort(state, failure, now)
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

    def _answer(self, state: ExecState, result: str, error: ToolError | None, now: int,
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


def _running(t: Transition, step: StepMsg) -> ExecState | None:
    """The state a ``run`` step of ``t`` would advance, if ``t`` wrote it and it still runs."""
    if step.kind != "run":
        return None
    state = next((s for s in reversed(t.writes) if s.execId == step.exec_id), None)
    if state is None or state.version != step.version or state.status != "running":
        return None
    return state


def _fuse(first: Transition, index: int, second: Transition) -> Transition:
    """``first`` with its step ``index`` replaced by what ``second`` decided for it."""
    writes: dict[str, ExecState] = {}
    for state in [*first.writes, *second.writes]:
        writes.pop(state.execId, None)
        writes[state.execId] = state  # the same object, later version: keep it once, last
    extra = [e for e in [second.expect, *second.also_expect] if e is not None and e != first.expect
             and e[0] not in {w.execId for w in first.writes}]
    return Transition(
        expect=first.expect,
        also_expect=[*first.also_expect, *extra],
        writes=list(writes.values()),
        steps=[*first.steps[:index], *first.steps[index + 1:], *second.steps],
        emits=[*first.emits, *second.emits],
        log=[*first.log, *second.log],
        definitions={**first.definitions, **second.definitions},
        finishes_root=first.finishes_root or second.finishes_root,
        done=[*first.done, *second.done],
    )


def _parent_version(child: ExecState) -> int:
    """The version of the parent's waiting state, encoded in the child's id."""
    return int(child.execId.rsplit(".", 1)[1]) + 1

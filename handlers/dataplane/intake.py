"""Turn executeTool commands into executions.

A command is acked only after its execution exists (or its answer is out),
and the execution's creation is guarded by the ``commandId``, so a command
published twice, or redelivered after a crash, runs once.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import structlog

from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.errors import ErrorCode, ToolFailure
from chatflow.runtime.events import tool_result
from chatflow.runtime.machine import Machine
from chatflow.runtime.runahead import RunAhead
from chatflow.runtime.state import RootInfo
from chatflow.schemas.definition import ToolDefinition
from chatflow.schemas.wire import ErrorInfo, ExecuteToolAction, ExecuteToolCommand

from ..keys import COMMANDS_GROUP, Keys
from ..operations import metrics
from ..redis_client import Client, Entry, send_all
from ..settings import DEFAULT_REPLY_STREAMS, reply_matcher
from .commandhead import command_head
from .store import Commit, Publish, Store, Verdict, dead_letter

if TYPE_CHECKING:
    from ..operations.tracing import Tracing

log = structlog.get_logger("chatflow.intake")
_decode = msgspec.json.Decoder(ExecuteToolCommand)
_enc = msgspec.json.Encoder()


async def ack_and_delete(client: Client, stream: str, group: str, ids: list[bytes]) -> None:
    """Ack and delete in one round trip: an acked command is never read again, and a kept
    one would hold its bytes (up to the whole command) in memory for good. Entries are
    deleted only once delivered, so XINFO's ``lag`` stays exact (no tombstone lies past
    the group's last delivered id)."""
    await send_all(client, [("XACK", stream, group, *ids), ("XDEL", stream, *ids)])


def _now() -> int:
    return int(time.time() * 1000)


def _readable_action(raw: bytes) -> ExecuteToolAction | None:
    """The action of a command that does not fit the wire types, when the action itself
    does (a bad context or a bad variable elsewhere): its onError rules still apply."""
    try:
        loose: Any = msgspec.json.decode(raw)
        action = loose.get("action") if isinstance(loose, dict) else None
        return msgspec.convert(action, ExecuteToolAction) if isinstance(action, dict) else None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


class Intake:
    def __init__(self, store: Store, machine: Machine, definitions: DefinitionCache,
                 clock: Callable[[], int] = _now, run_ahead: RunAhead | None = None,
                 tracing: Tracing | None = None) -> None:
        self.store = store
        self.keys: Keys = store.keys
        self.machine = machine
        self.definitions = definitions
        self.clock = clock
        self.results_maxlen = 0
        self.dead_letters_maxlen = 0
        # The worker shares its step processor's, which also runs inert blocks; this one
        # only settles (returns and guardrails).
        self.run_ahead = run_ahead or RunAhead(machine, self._definition, clock=clock)
        self.reply_allowed = reply_matcher(self.keys.prefix, DEFAULT_REPLY_STREAMS)
        # None while tracing is off: a command's traceparent is then not even read.
        self.tracing = tracing

    async def process(self, entries: list[Entry]) -> None:
        commands: list[tuple[bytes, ExecuteToolCommand]] = []
        rejects: list[Publish] = []
        for entry_id, fields in entries:
            parsed = self._parse(entry_id, fields)
            if isinstance(parsed, ExecuteToolCommand):
                commands.append((entry_id, parsed))
            else:
                rejects.append(parsed)
        commands = await self._check_reply_streams(commands, rejects)
        await self.store.publish_once(rejects, answers=True)
        acked = await self._start(commands)
        ids = [entry_id for entry_id, _ in entries if entry_id not in acked]
        if ids:
            await ack_and_delete(self.store.client, self.keys.commands, COMMANDS_GROUP, ids)

    def _parse(self, entry_id: bytes, fields: dict[bytes, bytes]) -> ExecuteToolCommand | Publish:
        raw = fields.get(b"data")
        if raw is None:
            return self._dead_letter(entry_id, fields, "entry has no 'data' field")
        try:
            return _decode.decode(raw)
        except msgspec.DecodeError as exc:
            return self._reject(entry_id, raw, fields, f"invalid executeTool command: {exc}")
        except RecursionError:  # nested deeper than the decoder's stack: one entry, not the batch
            return self._reject(entry_id, raw, fields, "invalid executeTool command: nested too deep")

    async def _check_reply_streams(self, commands: list[tuple[bytes, ExecuteToolCommand]],
                                   rejects: list[Publish]) -> list[tuple[bytes, ExecuteToolCommand]]:
        """Commands whose ``replyTo`` is allowed (CHATFLOW_REPLY_STREAMS) and is a stream, or
        absent; the others get an invalid_command result on the default result stream."""
        named = sorted({c.replyTo for _, c in commands if c.replyTo})
        types = dict(zip(named, await self.store.key_types(named), strict=True))
        kept: list[tuple[bytes, ExecuteToolCommand]] = []
        for entry_id, cmd in commands:
            reply_to = cmd.replyTo  # "" like absent: the default stream, as before
            why = None
            if reply_to and not self.reply_allowed(reply_to):
                why = (f"replyTo: {reply_to!r} is not an allowed reply stream "
                       "(CHATFLOW_REPLY_STREAMS)")
            elif reply_to and types[reply_to] not in ("none", "stream"):
                why = f"replyTo: {reply_to!r} is a {types[reply_to]} key, not a stream"
            if why is None:
                kept.append((entry_id, cmd))
                continue
            log.warning("command refused", entry=entry_id.decode(), reason=why)
            rejects.append(self._error_result(entry_id, cmd.commandId, cmd.action.id, None, why,
                                              action=cmd.action,
                                              variables=cmd.context.variables))
        return kept

    def _reject(self, entry_id: bytes, raw: bytes, fields: dict[bytes, bytes], why: str) -> Publish:
        """An error result when a commandId can be read; otherwise a dead letter."""
        head = command_head(raw)
        if head is None:
            return self._dead_letter(entry_id, fields, why)
        command_id, action_id, reply_to = head
        if reply_to and not self.reply_allowed(reply_to):
            reply_to = None
        return self._error_result(entry_id, command_id, action_id, reply_to, why,
                                  action=_readable_action(raw))

    def _error_result(self, entry_id: bytes, command_id: str, action_id: str | None,
                      reply_to: str | None, why: str, *, action: ExecuteToolAction | None = None,
                      variables: dict[str, Any] | None = None) -> Publish:
        """The ``invalid_command`` result, following the action's ``onError`` rules when the
        action could be read (docs/spec.md); a blocking handoff when it could not."""
        action = action or ExecuteToolAction(id=action_id or "", toolId="", publishedToolId="")
        root = RootInfo(command_id, action, reply_to, {}, "", variables or {}, {}, self.clock())
        failure = ErrorCode.INVALID_COMMAND.failure(cause=why)
        result = tool_result(root, execution_id="", result="",
                             error=ErrorInfo(failure.code, failure.message), now=self.clock())
        result = msgspec.structs.replace(result, actionId=action_id)
        stream = reply_to or self.keys.results
        return Publish(stream, Keys.sent_marker(stream, f"cmd:{entry_id.decode()}"),
                       _enc.encode(result), self.results_maxlen)

    def _dead_letter(self, entry_id: bytes, fields: dict[bytes, bytes], why: str,
                     deliveries: int = 1) -> Publish:
        log.warning("command dead-lettered", entry=entry_id.decode(), reason=why)
        metrics.dead_letter("commands")
        return dead_letter(self.keys, self.keys.commands, entry_id, fields, why, deliveries,
                           self.dead_letters_maxlen)

    async def _run_ahead(self, commits: list[Commit]) -> None:
        """Carry each new execution on within this hop (runtime/runahead.py), every partition
        of the batch at once: a tool of scripts and callTools answers in this hop."""
        by_partition: dict[int, list[Commit]] = {}
        for commit in commits:
            by_partition.setdefault(commit.partition, []).append(commit)
        groups = list(by_partition.values())
        carried = await asyncio.gather(*(
            self.run_ahead.carry(group[0].partition, [c.transition for c in group])
            for group in groups))
        for group, transitions in zip(groups, carried, strict=True):
            for commit, t in zip(group, transitions, strict=True):
                commit.transition = t

    def _definition(self, digest: str) -> ToolDefinition | None:
        published = self.definitions.get(digest)
        return published.definition if published else None

    async def _start(self, commands: list[tuple[bytes, ExecuteToolCommand]]) -> set[bytes]:
        """Start the commands' executions; returns the entries their commits acked. On one
        node the commit script acks and deletes the command itself, atomically with the
        execution (one round trip fewer); a cluster's commands stream is in another slot."""
        if not commands:
            return set()
        pts = [c.action.publishedToolId for _, c in commands]
        raws, flags = await self.store.tools_and_flags(
            pts, [c.context.contactId for _, c in commands])
        ack_stream = self.keys.commands if self.store.direct else None
        commits: list[Commit] = []
        now = self.clock()
        timeout_ms = self.machine.limits.tool_timeout_ms
        # 32 hex digits each, like uuid4().hex (all 128 bits random): one read of the OS's
        # random source for the batch, sliced, not one per command.
        rand = os.urandom(16 * len(commands)).hex()
        partition_of = self.keys.partition_of
        for i, ((entry_id, cmd), raw, flag) in enumerate(zip(commands, raws, flags, strict=True)):
            partition = partition_of(cmd.commandId)
            exec_id = f"{partition}-{rand[32 * i:32 * i + 32]}"
            parsed = self.definitions.parse(cmd.action.publishedToolId, raw)
            published, digest, data = ((parsed, "", b"") if isinstance(parsed, ToolFailure)
                                       else parsed)
            traceparent, tracestate = ("", "") if self.tracing is None or cmd.traceparent is None \
                else self.tracing.accept(cmd.commandId, cmd.traceparent, cmd.tracestate)
            t = self.machine.start(cmd, published, digest, data, exec_id=exec_id,
                                   partition=partition, now=now, debug=cmd.context.debug or flag,
                                   traceparent=traceparent, tracestate=tracestate)
            commits.append(Commit(partition, exec_id, t, entry_id if ack_stream else None,
                                  command_guard=cmd.commandId,
                                  deadline=(now + timeout_ms, exec_id), ack_stream=ack_stream))
        await self._run_ahead(commits)
        for commit in commits:  # a tree answered in this hop needs no deadline
            if commit.transition is not None and commit.transition.finishes_root:
                commit.deadline = None
        verdicts = await self.store.commit(commits)
        metrics.observe_commits(commits, verdicts, self.tracing)
        return {entry_id for (entry_id, _), verdict in zip(commands, verdicts, strict=True)
                if ack_stream and verdict != Verdict.WRONG_TYPE}

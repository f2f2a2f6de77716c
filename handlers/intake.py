"""Turn executeTool commands into executions.

A command is acked only after its execution exists (or its answer is out),
and the execution's creation is guarded by the ``commandId``, so a command
published twice, or redelivered after a crash, runs once.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import structlog

from chatflow.runtime.definitions import DefinitionCache
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.events import tool_result
from chatflow.runtime.machine import Machine
from chatflow.runtime.state import RootInfo, Transition
from chatflow.schemas.definition import ToolDefinition
from chatflow.schemas.wire import ExecuteToolAction, ExecuteToolCommand, ToolError

from . import metrics
from .keys import COMMANDS_GROUP, Keys
from .redis_client import Client
from .store import Commit, Publish, Store, dead_letter

log = structlog.get_logger("chatflow.intake")
_decode = msgspec.json.Decoder(ExecuteToolCommand)
_enc = msgspec.json.Encoder()
Entry = tuple[bytes, dict[bytes, bytes]]
RunAhead = Callable[[int, list[Transition | None]], Awaitable[None]]


async def ack_and_delete(client: Client, stream: str, group: str, ids: list[bytes]) -> None:
    """Ack and delete in one round trip: an acked command is never read again, and a kept
    one would hold its bytes (up to the whole command) in memory for good. Entries are
    deleted only once delivered, so XINFO's ``lag`` stays exact (no tombstone lies past
    the group's last delivered id)."""
    async with client.pipeline(transaction=False) as pipe:
        pipe.xack(stream, group, *ids)
        pipe.xdel(stream, *ids)
        await pipe.execute()


def _now() -> int:
    return int(time.time() * 1000)


class Intake:
    def __init__(self, store: Store, machine: Machine, definitions: DefinitionCache,
                 clock: Callable[[], int] = _now, run_ahead: RunAhead | None = None) -> None:
        self.store = store
        self.keys: Keys = store.keys
        self.machine = machine
        self.definitions = definitions
        self.clock = clock
        self.results_maxlen = 0
        self.dead_letters_maxlen = 0
        self.run_ahead = run_ahead

    async def process(self, entries: list[Entry]) -> None:
        commands: list[tuple[bytes, ExecuteToolCommand]] = []
        rejects: list[Publish] = []
        for entry_id, fields in entries:
            parsed = self._parse(entry_id, fields)
            if isinstance(parsed, ExecuteToolCommand):
                commands.append((entry_id, parsed))
            else:
                rejects.append(parsed)
        await self.store.publish_once(rejects)
        await self._start(commands)
        ids = [entry_id for entry_id, _ in entries]
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

    def _reject(self, entry_id: bytes, raw: bytes, fields: dict[bytes, bytes], why: str) -> Publish:
        """An error result when a commandId can be read; otherwise a dead letter."""
        try:
            loose: Any = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            loose = None
        command_id = loose.get("commandId") if isinstance(loose, dict) else None
        if not isinstance(command_id, str) or not command_id:
            return self._dead_letter(entry_id, fields, why)
        action = loose.get("action") if isinstance(loose.get("action"), dict) else {}
        reply_to = loose.get("replyTo") if isinstance(loose.get("replyTo"), str) else None
        action_id = action.get("id") if isinstance(action.get("id"), str) else None
        root = RootInfo(command_id, ExecuteToolAction(id=action_id or "", toolId="",
                                                      publishedToolId=""),
                        reply_to, {}, "", {}, {}, self.clock())
        result = tool_result(root, execution_id="", result="",
                             error=ToolError("invalid_command", why), now=self.clock())
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
        """Carry each new execution on while its blocks are inert (handlers/steps.py), every
        partition of the batch at once: a tool of scripts and callTools answers in this hop."""
        run_ahead = self.run_ahead
        if run_ahead is None:
            return
        by_partition: dict[int, list[Commit]] = {}
        for commit in commits:
            by_partition.setdefault(commit.partition, []).append(commit)
        groups = [(group, [c.transition for c in group]) for group in by_partition.values()]
        await asyncio.gather(*(run_ahead(group[0].partition, transitions)
                               for group, transitions in groups))
        for group, transitions in groups:
            for commit, t in zip(group, transitions, strict=True):
                commit.transition = t

    def _definition(self, digest: str) -> ToolDefinition | None:
        published = self.definitions.get(digest)
        return published.definition if published else None

    async def _start(self, commands: list[tuple[bytes, ExecuteToolCommand]]) -> None:
        if not commands:
            return
        pts = [c.action.publishedToolId for _, c in commands]
        raws, flags = await self.store.tools_and_flags(
            pts, [c.context.contactId for _, c in commands])
        commits: list[Commit] = []
        for (_, cmd), raw, flag in zip(commands, raws, flags, strict=True):
            partition = self.keys.partition_of(cmd.commandId)
            exec_id = f"{partition}-{uuid.uuid4().hex}"
            parsed = self.definitions.parse(cmd.action.publishedToolId, raw)
            now = self.clock()
            published, digest, data = ((parsed, "", b"") if isinstance(parsed, ToolFailure)
                                       else parsed)
            t = self.machine.start(cmd, published, digest, data, exec_id=exec_id,
                                   partition=partition, now=now, debug=cmd.context.debug or flag)
            deadline = (now + self.machine.limits.tool_timeout_ms, exec_id)
            commits.append(Commit(partition, exec_id, self.machine.settle(t, self._definition, now),
                                  None, command_guard=cmd.commandId, deadline=deadline))
        await self._run_ahead(commits)
        for commit in commits:  # a tree answered in this hop needs no deadline
            if commit.transition is not None and commit.transition.finishes_root:
                commit.deadline = None
        metrics.observe_commits(commits, await self.store.commit(commits))

"""The runtime's Redis I/O: loading states, committing transitions, publishing once.

This module is the one place where the state machine's decisions meet Redis.
Every call that carries many items goes in one write (``send_all``): workers handle
steps in batches, and the round trips, not Redis, are the cost.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import IntEnum
from importlib import resources
from typing import Any

import msgspec
import structlog
from redis.exceptions import NoScriptError

from chatflow.runtime.limits import LOG_VALUE_MAX_BYTES, bounded_entry
from chatflow.runtime.masking import mask
from chatflow.runtime.state import (
    ExecState,
    StepOut,
    Transition,
    encode_log,
    state_decoder,
    state_encoder,
)
from chatflow.schemas.wire import DeadLetter

from ..keys import COMMANDS_GROUP, STEPS_GROUP, Keys
from ..redaction import SecretIndex
from ..redis_client import Client, Command, Pipeline, send_all

log = structlog.get_logger("chatflow.store")


class Verdict(IntEnum):
    """What commit.lua did with one record. The script reads this very enum: ``LuaScript``
    renders it into the source as the table ``V``, so the two sides cannot drift apart."""

    ALREADY_ANSWERED = 0  # the tree's done key exists: dropped (acked)
    COMMITTED = 1
    STALE = -1  # an expected version moved on: dropped (acked)
    DUPLICATE = 2  # the commandId guard exists: the command ran already (acked)
    WRONG_TYPE = 3  # a key it writes holds another type: nothing written, not acked


def lua_table(name: str, enum: type[IntEnum]) -> str:
    """``local NAME = {MEMBER = value, ...}``: a Python enum as Lua source."""
    fields = ", ".join(f"{member.name} = {int(member.value)}" for member in enum)
    return f"local {name} = {{{fields}}}\n"


class Op(IntEnum):
    """commit.lua's ops. An op's first argument is ``key index * 16 + op`` (one argument, not
    two: a record's bytes are mostly its framing), then its fields, ``ARITY`` arguments in
    all. Checks come first in a record, then its writes; the script reads both tables, which
    ``LuaScript`` renders into its source, so the two sides cannot disagree on a layout.
    Ttls, MAXLENs and groups are the call's, sent once (commit.lua's header comment)."""

    DONE = 1  # check: the done key (ALREADY_ANSWERED when it exists)
    TYPE = 2  # check: a stream a command named is a stream or absent (else WRONG_TYPE)
    EXPECT = 3  # check: an execution's state has this version (else STALE)
    GUARD = 4  # the commandId guard, SET NX, the first write: its value (else DUPLICATE)
    ANSWER = 5  # the tree's answer, its done key: the deadlines' key idx (0: none), root id
    DEFINITION = 6  # a definition copy: its data
    STATE = 7  # an execution's state (HSET + EXPIRE): version, blob
    DELETE = 8  # a key deleted (an answered tree's state)
    STEP = 9  # a step entry: its data
    PUBLISH = 10  # a public message (MAXLEN and ttl: the call's, per stream): its data
    OUTBOX = 11  # an outbox entry (a cluster): kind, target, data
    LOG = 12  # a tree's log begun: its first line
    APPEND = 13  # a line appended to a tree's log: the line, 1 to renew the log's ttl
    DEADLINE = 14  # ZADD: score, member (a deadline: its ms and root id; a delayed step:
    # when it is due and its data, on the partition's delayed zset)


ARITY = {Op.DONE: 1, Op.TYPE: 1, Op.EXPECT: 2, Op.GUARD: 2, Op.ANSWER: 3, Op.DEFINITION: 2,
         Op.STATE: 3, Op.DELETE: 1, Op.STEP: 2, Op.PUBLISH: 2, Op.OUTBOX: 4, Op.LOG: 2,
         Op.APPEND: 3, Op.DEADLINE: 3}
(_DONE, _TYPE, _EXPECT, _GUARD, _ANSWER, _DEFINITION, _STATE, _DELETE, _STEP, _PUBLISH,
 _OUTBOX, _LOG, _APPEND, _DEADLINE) = (int(op) for op in Op)  # plain ints on the hot path


def lua_arity() -> str:
    fields = ", ".join(f"[{int(op)}] = {n}" for op, n in ARITY.items())
    return f"local N = {{{fields}}}\n"


class _Batch:
    """What one commit.lua call is being filled with: the records' flat arguments, and the
    streams they ack and publish to (sent once per call, with their groups and limits)."""

    __slots__ = ("acked", "args", "key", "published", "streams")

    def __init__(self, key: Callable[[str], int]) -> None:
        self.key = key
        self.args: list[Any] = []
        self.acked: dict[int, str] = {}
        self.streams: dict[int, tuple[int, int]] = {}
        self.published: dict[tuple[str, str], int] = {}  # (kind, key) of a message: its op

    def ack(self, stream: str, group: str) -> int:
        i = self.key(stream)
        self.acked[i] = group
        return i

    def stream(self, name: str, maxlen: int, ttl: int) -> int:
        i = self.key(name)
        self.streams[i] = (maxlen, ttl)
        return i


class LuaScript:
    """A script sent as EVALSHA inside pipelines.

    redis-py's Script objects make every pipeline check SCRIPT EXISTS first, one
    more round trip per batch; these are loaded once (and again after NOSCRIPT,
    e.g. when Redis restarted) instead.
    """

    def __init__(self, name: str, header: str = "") -> None:
        self.source = header + resources.files("chatflow.handlers.dataplane").joinpath(
            f"lua/{name}.lua").read_text()
        self.sha = hashlib.sha1(self.source.encode(), usedforsecurity=False).hexdigest()

    def command(self, keys: list[str], args: list[Any]) -> Command:
        # EVALSHA as a plain command, not pipe.evalsha: redis-py's ClusterPipeline refuses
        # the latter, yet routes a queued EVALSHA by its keys (all in one slot: one node).
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    def queue(self, pipe: Pipeline, keys: list[str], args: list[Any]) -> None:
        pipe.execute_command(*self.command(keys, args))


COMMIT = LuaScript("commit", header=lua_table("V", Verdict) + lua_table("OP", Op)
                   + lua_arity())
PUBLISH_ONCE = LuaScript("publish_once")
RENEW = LuaScript("renew")
PROMOTE = LuaScript("promote")  # delayed steps due (handlers/dataplane/delayed.py)
SCRIPTS = (COMMIT, PUBLISH_ONCE, RENEW, PROMOTE)


@dataclass(frozen=True, slots=True)
class Targets:
    """Where each kind of emitted message goes, and how long that stream may grow."""

    keys: Keys
    results_maxlen: int = 0
    executions_maxlen: int = 0
    debug_maxlen: int = 1000
    llm_usage_maxlen: int = 0
    debug_ttl_s: int = 86_400

    def resolve(self, kind: str, key: str) -> tuple[str, int]:
        if kind == "result":
            return (key or self.keys.results), self.results_maxlen
        if kind == "execution":
            return self.keys.executions, self.executions_maxlen
        if kind == "debug":
            return self.keys.debug(key), self.debug_maxlen
        return self.keys.llm_usage, self.llm_usage_maxlen

    def ttl(self, kind: str) -> int:
        """How long a stream of this kind lives after its last message (0: for ever). Only
        per-contact debug streams expire: any command may name a new contact."""
        return self.debug_ttl_s if kind == "debug" else 0

INLINE_STATE_MAX = 16 * 1024  # larger states are read from their key, not copied
COMMITTED, ALREADY_ANSWERED, STALE, DUPLICATE = (
    Verdict.COMMITTED, Verdict.ALREADY_ANSWERED, Verdict.STALE, Verdict.DUPLICATE)


@dataclass(slots=True)
class Commit:
    """A transition to commit for one entry (``ack_id``, of the partition's step stream or of
    ``ack_stream``), or a bare ack."""

    partition: int
    root_id: str
    transition: Transition | None
    ack_id: bytes | str | None = None
    command_guard: str | None = None
    deadline: tuple[int, str] | None = None
    ack_stream: str | None = None  # None: the partition's step stream

    @property
    def one_hop(self) -> bool:
        """A tree born and answered in this very commit: nothing of it is read later but
        its log and its public messages."""
        t = self.transition
        return (self.command_guard is not None and t is not None and t.finishes_root
                and not t.steps)


@dataclass(slots=True)
class Publish:
    stream: str
    marker: str
    data: bytes
    maxlen: int = 0
    ttl_s: int = 0


def dead_letter(keys: Keys, stream: str, entry_id: bytes, fields: dict[bytes, bytes], reason: str,
                deliveries: int = 1, maxlen: int = 0) -> Publish:
    """The dead-letter message for an entry of ``stream`` (its fields kept, capped at 64 KiB)."""
    raw = b" ".join(k + b"=" + v for k, v in fields.items())[:65536]
    letter = DeadLetter(reason, stream, entry_id.decode(), deliveries,
                        raw.decode("utf-8", errors="replace"))
    target = keys.dead_letters
    return Publish(target, Keys.sent_marker(target, f"{stream}:{entry_id.decode()}"),
                   msgspec.json.encode(letter), maxlen)


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


class Coalescer:
    """Gathers the keys asked for in one event-loop turn into one batched fetch."""

    def __init__(self, fetch: Callable[[list[str]], Awaitable[list[bytes | None]]]) -> None:
        self._fetch = fetch
        self._pending: list[tuple[str, asyncio.Future[bytes | None]]] = []

    async def get(self, key: str) -> bytes | None:
        loop = asyncio.get_running_loop()
        if not self._pending:
            loop.call_soon(lambda: asyncio.ensure_future(self._flush()))
        future: asyncio.Future[bytes | None] = loop.create_future()
        self._pending.append((key, future))
        return await future

    async def _flush(self) -> None:
        batch, self._pending = self._pending, []
        try:
            values = await self._fetch([key for key, _ in batch])
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), value in zip(batch, values, strict=True):
            if not future.done():
                future.set_result(value)


_debug_event = msgspec.json.Decoder(dict[str, Any])


async def mask_debug_events(secrets: SecretIndex, commits: list[Commit]) -> None:
    """Mask the workspace's stored secret values in every debug event of ``commits`` (a
    contact's debug stream must never hold one, even echoed back by an upstream or copied by
    a script). Only debug events are looked at: a batch without any costs one pass over its
    emits' kinds."""
    for commit in commits:
        t = commit.transition
        if t is None or not t.emits:
            continue
        for i, emit in enumerate(t.emits):
            if emit.kind != "debug":
                continue
            event = _debug_event.decode(emit.data)
            known = await secrets.of(str(event.get("workspace") or "default"))
            if known:
                event["payload"] = mask(event.get("payload"), known)
                t.emits[i] = msgspec.structs.replace(emit, data=msgspec.json.encode(event))


class Store:
    def __init__(self, client: Client, keys: Keys, *, state_ttl_s: int, dedup_ttl_s: int,
                 marker_ttl_s: int, direct: bool = False, targets: Targets | None = None,
                 log_value_max_bytes: int = LOG_VALUE_MAX_BYTES) -> None:
        """``direct``: emitted messages go straight to their public streams inside the
        commit script (one node: every key is reachable from one script); otherwise
        through the partition's outbox and the relay (Redis Cluster)."""
        self.client = client
        self.keys = keys
        self.state_ttl_s = state_ttl_s
        self.dedup_ttl_s = dedup_ttl_s
        self.marker_ttl_s = marker_ttl_s
        self.direct = direct
        self.targets = targets or Targets(keys)
        self.log_value_max_bytes = log_value_max_bytes  # each value an event-log entry keeps
        self._steps = [keys.steps(n) for n in range(keys.partitions)]  # named once, not per record
        self._tools = Coalescer(self.get_tools)
        # The workspaces' stored secret values, masked in every debug event before it is
        # written (handlers/redaction.py); None: not looked for (tools of tests, the CLI).
        self.secrets: SecretIndex | None = None

    async def _execute(self, commands: list[Command]) -> list[Any]:
        """Send script calls in one round trip; reload the scripts once on NOSCRIPT."""
        try:
            return await send_all(self.client, commands)
        except NoScriptError:
            await self.load_scripts()
        return await send_all(self.client, commands)

    async def run_scripts(self, commands: list[Command]) -> list[Any]:
        """Script calls (``LuaScript.command``) in one round trip, reloading on NOSCRIPT."""
        return await self._execute(commands)

    async def load_scripts(self) -> None:
        for script in SCRIPTS:
            await self.client.script_load(script.source)

    # -- reads -----------------------------------------------------------------

    async def get_tool(self, published_tool_id: str) -> bytes | None:
        # Coalesced: the callTool blocks of one batch run concurrently, and one
        # pipeline for all of them beats a connection each.
        return await self._tools.get(published_tool_id)

    async def get_server(self, server_id: str) -> bytes | None:
        """``integration:server:{serverId}``: the IntegrationServerCacheConfig (callEndpoint)."""
        value: bytes | None = await self.client.get(self.keys.server(server_id))
        return value

    async def get_credential(self, credential_id: str) -> bytes | None:
        """``llm:credential:{id}`` (runtime.blocks.ai.CredentialSource)."""
        value: bytes | None = await self.client.get(self.keys.llm_credential(credential_id))
        return value

    async def get_tools(self, ids: list[str]) -> list[bytes | None]:
        raws, _ = await self.tools_and_flags(ids, [])
        return raws

    async def tools_and_flags(self, ids: list[str], contact_ids: list[str]
                              ) -> tuple[list[bytes | None], list[bool]]:
        """The published tools and the contacts' debug flags, in one round trip. A batch
        names few distinct tools and contacts: each key is read once."""
        if not ids and not contact_ids:
            return [], []
        tools, contacts = list(dict.fromkeys(ids)), list(dict.fromkeys(contact_ids))
        raw = await send_all(self.client, [
            *(("GET", self.keys.tool(pt)) for pt in tools),
            *(("EXISTS", self.keys.debug_flag(contact)) for contact in contacts)])
        tool = dict(zip(tools, raw[: len(tools)], strict=True))
        flag = dict(zip(contacts, raw[len(tools):], strict=True))
        return [tool[pt] for pt in ids], [bool(flag[c]) for c in contact_ids]

    async def answered(self, partition: int, root_ids: list[str]) -> list[bool]:
        """Whether each tree's single outcome is claimed (its done key exists)."""
        if not root_ids:
            return []
        return [bool(x) for x in await send_all(
            self.client, [("EXISTS", self.keys.done(partition, r)) for r in root_ids])]

    async def key_types(self, names: list[str]) -> list[str]:
        """``TYPE`` of each key (``none`` when absent), in one round trip."""
        if not names:
            return []
        return [_text(t) for t in await send_all(self.client, [("TYPE", n) for n in names])]

    async def debug_flags(self, contact_ids: list[str]) -> list[bool]:
        if not contact_ids:
            return []
        return [bool(x) for x in await send_all(
            self.client, [("EXISTS", self.keys.debug_flag(c)) for c in contact_ids])]

    async def load_states(self, refs: list[tuple[int, str]],
                          known: list[ExecState | None] | None = None) -> list[ExecState | None]:
        """States by (partition, execution id); ``known`` ones (inlined in their step) are kept."""
        if known is not None:
            missing = [i for i, state in enumerate(known) if state is None]
            if not missing:
                return list(known)
            loaded = await self.load_states([refs[i] for i in missing])
            merged = list(known)
            for i, state in zip(missing, loaded, strict=True):
                merged[i] = state
            return merged
        if not refs:
            return []
        blobs = await send_all(self.client, [("HGET", self.keys.state(partition, exec_id), "s")
                                             for partition, exec_id in refs])
        return [state_decoder.decode(b) if b else None for b in blobs]

    async def load_definitions(self, refs: list[tuple[int, str]]) -> list[bytes | None]:
        if not refs:
            return []
        return await send_all(self.client, [("GET", self.keys.definition(partition, digest))
                                            for partition, digest in refs])

    # -- writes ----------------------------------------------------------------

    async def commit(self, commits: list[Commit]) -> list[int]:
        """Commit transitions, one script call for the whole batch (one per partition on a
        cluster; each transition atomic on its own); returns each one's verdict, in order."""
        if self.secrets is not None:
            await mask_debug_events(self.secrets, commits)
        verdicts = await self._commit(commits, redirect=False)
        wrong = [i for i, v in enumerate(verdicts) if v == Verdict.WRONG_TYPE]
        if wrong:
            # A key the transition writes holds another type: a replyTo stream someone
            # turned into a string, say. Its answer goes to the default result stream
            # instead (debug events are dropped), so the command is still answered.
            again = await self._commit([commits[i] for i in wrong], redirect=True)
            for i, verdict in zip(wrong, again, strict=True):
                verdicts[i] = verdict
                log.error("commit met a key of the wrong type; answer redirected to the "
                          "default result stream", root_id=commits[i].root_id,
                          redirected=verdict != Verdict.WRONG_TYPE)
        return verdicts

    async def _commit(self, commits: list[Commit], *, redirect: bool) -> list[int]:
        if not commits:
            return []
        if self.direct:
            # One node: every key is reachable from one script, so an intake batch's records
            # of every partition share one call (the call's fixed cost, a few hundred µs of
            # Valkey's one thread, was paid once per partition).
            groups = [list(range(len(commits)))]
        else:
            # A cluster: a script's keys must share a slot, the partition's.
            by_partition: dict[int, list[int]] = {}
            for i, c in enumerate(commits):
                by_partition.setdefault(c.partition, []).append(i)
            groups = list(by_partition.values())
        batches = [(idx, self._batch_args(commits[idx[0]].partition,
                                          [commits[i] for i in idx], redirect))
                   for idx in groups]

        replies = await self._execute([COMMIT.command(keys, args) for _, (keys, args) in batches])
        verdicts = [0] * len(commits)
        for (idx, _args), result in zip(batches, replies, strict=True):
            for i, verdict in zip(idx, result, strict=True):
                verdicts[i] = int(verdict)
        return verdicts

    def _batch_args(self, n: int, commits: list[Commit],
                    redirect: bool = False) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV of one commit.lua call: the constants once, then the records laid
        flat, one after another (the script's header comment has the layout)."""
        keys = [self.keys.steps(n)]
        index = {keys[0]: 1}

        def key(name: str) -> int:
            i = index.get(name)
            if i is None:
                keys.append(name)
                i = index[name] = len(keys)
            return i

        batch = _Batch(key)
        for c in commits:
            self._record(c, batch, redirect)
        args: list[Any] = [self.dedup_ttl_s, self.state_ttl_s, self.state_ttl_s + 600,
                           len(batch.acked)]
        for stream, group in batch.acked.items():
            args += (stream, group)
        args.append(len(batch.streams))
        for stream, (maxlen, ttl) in batch.streams.items():
            args += (stream, maxlen, ttl)
        args += batch.args
        return keys, args

    def _record(self, c: Commit, batch: _Batch, redirect: bool = False) -> None:
        """One record of commit.lua, appended to the batch: its checks, then its writes.
        Every write below names its reader: a write nobody reads later is work the commit
        need not do (docs/architecture.md, "The commit record"). An op is ``key index * 16 +
        op`` and its fields (:class:`Op`); blobs travel as the bytes they are."""
        k, n, t, key, args = self.keys, c.partition, c.transition, batch.key, batch.args
        # The entry this record acks: a step of its partition, or (one node) the command.
        if not c.ack_id:
            head: tuple[Any, int] = ("", 0)
        elif c.ack_stream:
            head = (c.ack_id, batch.ack(c.ack_stream, COMMANDS_GROUP))
        else:
            head = (c.ack_id, batch.ack(self._steps[n], STEPS_GROUP))
        if t is None:
            args += (*head, 0, 0)
            return
        args += head
        at = len(args)
        args += (0, 0)  # the lengths of the checks and of the writes: set below
        one_hop = c.one_hop
        answers = t.finishes_root and not one_hop
        # The done key is read by every later commit of the tree and by the step path before
        # a block with side effects runs (Store.answered): one outcome per tree. A tree born
        # in this record (its execution id is new) cannot have one yet: no check. One
        # answered by its first commit has none either: its guard makes this its only commit
        # (no done key to set, no deadline to remove).
        done = key(k.done(n, c.root_id)) if answers or c.command_guard is None else 0
        self._check_ops(t, n, done, key, args, redirect)
        writes = len(args)
        args[at] = writes - at - 2
        if c.command_guard is not None:
            # Read by this script when the command comes again (a producer's retry, a
            # redelivery): the command runs once. Its value, the root's id, is for operators.
            args += (key(k.command_guard(n, c.command_guard)) * 16 + _GUARD, c.root_id)
        if answers:
            args += (done * 16 + _ANSWER, key(k.deadlines(n)), c.root_id)
        if not one_hop:
            # Read by the next hop's worker (Store.load_definitions) when its cache lacks the
            # tree's definition, and by `chatflow replay`: the published tool may change
            # while the tree waits. A tree answered here is replayed from `tool:<id>`.
            for digest, data in t.definitions.items():
                args += (key(k.definition(n, digest)) * 16 + _DEFINITION, data)
        # A tree answered here has no later hop to read a state, nor a step.
        blobs = {} if one_hop else self._state_ops(c, key, args)
        if t.steps:
            self._step_ops(t, key(self._steps[n]), blobs, args)
        if t.delayed:
            # Read by the promoter (handlers/dataplane/delayed.py) when due: a retry's wait
            # holds nothing but this member. Not inlined: the state is in its key.
            delayed = key(k.delayed(n)) * 16 + _DEADLINE
            for due, step in t.delayed:
                args += (delayed, due, state_encoder.encode(StepOut(
                    step.exec_id, step.version, step.kind, step.child, None, step.attempts,
                    step.since)))
        self._emit_ops(t, n, batch, redirect)
        self._log_op(c, key, args)
        if c.deadline is not None and not one_hop:
            # Read by the reaper (overdue trees) and `chatflow executions` (trees in flight).
            args += (key(k.deadlines(n)) * 16 + _DEADLINE, c.deadline[0], c.deadline[1])
        args[at + 1] = len(args) - writes

    def _check_ops(self, t: Transition, n: int, done: int, key: Callable[[str], int],
                   args: list[Any], redirect: bool) -> None:
        """A record's checks, in the order of their verdicts' precedence: the done key, the
        type of a stream a command named (replyTo, the one key the runtime does not own),
        the expected versions."""
        if done:
            args.append(done * 16 + _DONE)
        if self.direct and not redirect:
            for emit in t.emits:
                if emit.kind == "result" and emit.key:
                    args.append(key(emit.key) * 16 + _TYPE)
        if t.expect:
            args += (key(self.keys.state(n, t.expect[0])) * 16 + _EXPECT, t.expect[1])
        for exec_id, version in t.also_expect:
            args += (key(self.keys.state(n, exec_id)) * 16 + _EXPECT, version)

    @staticmethod
    def _step_ops(t: Transition, steps_key: int, blobs: dict[tuple[str, int], bytes],
                  args: list[Any]) -> None:
        """Read by the step subscribers: the blocks that must wait for a worker. A state
        written by this record rides along in its step (no read of it in the next hop)."""
        for step in t.steps:
            inline = blobs.get((step.exec_id, step.version))
            raw = (msgspec.Raw(inline) if inline is not None
                   and len(inline) <= INLINE_STATE_MAX else None)
            out = state_encoder.encode(StepOut(step.exec_id, step.version, step.kind,
                                               step.child, raw))
            args += (steps_key * 16 + _STEP, out)

    def _state_ops(self, c: Commit, key: Callable[[str], int], args: list[Any]
                   ) -> dict[tuple[str, int], bytes]:
        """Ops for the execution states of a record that is not one hop; returns the encoded
        blobs, to inline in steps."""
        t, n = c.transition, c.partition
        assert t is not None
        blobs: dict[tuple[str, int], bytes] = {}
        if t.finishes_root:
            # Nothing reads the states of an answered tree: a stale step of it meets the done
            # key first, cancel answers "already answered", `chatflow executions` lists trees
            # by deadline. The ones stored before go now rather than at their TTL.
            for exec_id, _version in [*([t.expect] if t.expect else []), *t.also_expect]:
                args.append(key(self.keys.state(n, exec_id)) * 16 + _DELETE)
            return blobs
        # Read by the next hop (Store.load_states, when not inlined in its step), by the
        # version checks of later commits, by run-ahead's parents, by cancel and by
        # `chatflow executions`.
        for state in t.writes:
            blob = state_encoder.encode(state)
            blobs[(state.execId, state.version)] = blob
            args += (key(self.keys.state(n, state.execId)) * 16 + _STATE, state.version, blob)
        return blobs

    def _log_op(self, c: Commit, key: Callable[[str], int], args: list[Any]) -> None:
        """The transition's line of its tree's log. Read by `chatflow exec --trace`,
        `chatflow replay`, GET /executions/{id}/events and the Studio. Its TTL runs from the
        tree's first commit and is renewed while the tree goes on, not by its last commit
        (a command saved; the log outlives the tree by CHATFLOW_STATE_TTL_S less its last
        hop)."""
        t = c.transition
        if t is None or not t.log:
            return
        log_key = key(self.keys.log(c.partition, c.root_id)) * 16
        raw = encode_log(t.log)
        if len(raw) > self.log_value_max_bytes:
            # Large values are kept truncated, with their size noted (CHATFLOW_LOG_VALUE_MAX_BYTES);
            # the common small line is encoded once, never measured entry by entry.
            raw = encode_log([bounded_entry(e, self.log_value_max_bytes) for e in t.log])
        if c.command_guard is not None:
            args += (log_key + _LOG, raw)
        else:
            args += (log_key + _APPEND, raw, 0 if t.finishes_root else 1)

    async def renew_leases(self, calls: list[tuple[str, str, list[bytes]]],
                           consumer: str) -> list[int]:
        """Reset the idle time of ``consumer``'s pending entries, per (stream, group, ids)
        (handlers/dataplane/leases.py); returns how many each call renewed."""
        return [int(x) for x in await self._execute(
            [RENEW.command([stream], [group, consumer, *ids]) for stream, group, ids in calls])]

    def _emit_ops(self, t: Transition, n: int, batch: _Batch, redirect: bool) -> None:
        """Ops for the transition's public messages. ``redirect``: a result goes to the
        default result stream and debug events are dropped (Store.commit, WRONG_TYPE)."""
        args = batch.args
        for emit in t.emits:
            if redirect and emit.kind == "debug":
                continue
            target = "" if redirect and emit.kind == "result" else emit.key
            if self.direct:
                # Read by the command's producer (result), the projections (execution), a
                # person debugging (debug), billing (llm_usage). A replyTo stream's type
                # is checked first (Store._record).
                op = batch.published.get((emit.kind, target))
                if op is None:
                    stream, maxlen = self.targets.resolve(emit.kind, target)
                    op = batch.published[(emit.kind, target)] = (
                        batch.stream(stream, maxlen, self.targets.ttl(emit.kind)) * 16
                        + _PUBLISH)
                args += (op, emit.data)
            else:
                args += (batch.key(self.keys.outbox(n)) * 16 + _OUTBOX, emit.kind, target,
                         emit.data)

    async def publish_once(self, items: list[Publish], *, answers: bool = False) -> list[int]:
        """Publish each item once: 1 written, 0 written before, -1 refused (its stream is a
        key of another type). ``answers``: a refused result goes to the default result
        stream instead, so its command is still answered."""
        if not items:
            return []

        verdicts = [int(x) for x in await self._execute([
            PUBLISH_ONCE.command([p.stream, p.marker], [p.data, self.marker_ttl_s, p.maxlen, p.ttl_s])
            for p in items])]
        results = self.keys.results
        refused = [i for i, v in enumerate(verdicts) if v == -1 and items[i].stream != results]
        if answers and refused:
            log.error("result stream holds another type; answers redirected to the default "
                      "result stream", streams=sorted({items[i].stream for i in refused}))
            again = await self.publish_once([Publish(
                results, Keys.sent_marker(results, items[i].marker), items[i].data,
                self.targets.results_maxlen) for i in refused])
            for i, verdict in zip(refused, again, strict=True):
                verdicts[i] = verdict
        return verdicts

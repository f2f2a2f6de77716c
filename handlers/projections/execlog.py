"""The execution log projection: ``stream:tool-executions`` -> per-tool dedup log + hourly buckets.

Per tool (hash tag ``{proj:<toolId>}``, so one Lua call updates all of them on a cluster; on
one node one call applies a whole batch, every tool, and acks it):

* ``:log``     zset executionId -> occurredAt ms: the dedup. The script asks it which of a
  batch's ids it holds (one ``ZMSCORE``) and adds the new ones (one ``ZADD``), so an event
  delivered twice (redelivery, reclaim, a rebuild over a live projection) is counted once,
  in the same script as the counters. Kept for the log retention (8 days by default: the
  7-day window plus a day), the longest an event can arrive late and still be counted;
  pruned by each process at most once a minute per tool.
* ``:buckets`` hash ``<hour>:n`` / ``<hour>:ok`` / ``<hour>:ms`` (hour = epoch ms // 3.6e6).

No audit row per execution: the event's JSON is in the source stream for its retention,
and in the run history (SQL, docs/history.md) for as long as that keeps runs. A ``:events``
hash left by an earlier version is emptied as its ids age out of the log.

Events older than the log retention are ignored (they would be pruned at once,
and counting them again after their dedup entry was pruned would double them).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from datetime import datetime
from typing import Any, NamedTuple

import msgspec
import structlog
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

from chatflow.schemas.wire import ToolExecutionStreamEvent

from ..keys import PROJECTION_GROUP, Keys
from ..operations.metrics import TRIMMED_UNREAD
from ..redis_client import Client, Entry, send_all
from ..redis_client import ensure_group as ensure_stream_group
from .metrics import HOUR_MS, WINDOW_HOURS, to_ms, tool_metrics
from .progress import GroupProgress, entry_id, text

log = structlog.get_logger("chatflow.projections")
_decode = msgspec.json.Decoder(ToolExecutionStreamEvent)

# One call applies a batch: every tool of it on one node, one tool on a cluster (a tool's keys
# share its hash tag; the tools set and the source stream are in other slots).
# KEYS: [tools set, source stream when ARGV[3] is 1], then per tool: log zset, legacy events
#       hash (only emptied), buckets hash.
# ARGV: log floor ms, bucket floor hour, direct (1: SADD each tool into KEYS[1] and XACK the
#       batch's entries of KEYS[2] here, atomically with the counts: one round trip per batch),
#       [group, number of entry ids, the ids: when direct], then per tool: its id, its number of
#       events, whether to prune its log now (1/0: ids past the log floor go at most once a
#       minute, not on every call), and per event three values: dedup id, occurred ms, signed
#       duration (ms when it succeeded, -1 - ms when it failed: one argument fewer per event;
#       the hour is computed here for the same reason).
# Returns one verdict per event, in order: 1 applied, 0 duplicate, -1 older than the log floor.
_APPLY = """
local log_floor, bucket_floor = tonumber(ARGV[1]), tonumber(ARGV[2])
local direct = ARGV[3] == '1'
local k, a = 1, 4
local function call_all(cmd, key, args)
  -- unpack() is bounded by Lua's C stack: a rebuild's page of history goes in parts
  if #args <= 4000 then return redis.call(cmd, key, unpack(args)) end
  local out = {}
  for i = 1, #args, 4000 do
    local part = redis.call(cmd, key, unpack(args, i, math.min(i + 3999, #args)))
    if type(part) == 'table' then
      for _, v in ipairs(part) do out[#out + 1] = v end
    end
  end
  return out
end
if direct then
  local n = tonumber(ARGV[5])
  for i = 1, n, 4000 do
    redis.call('XACK', KEYS[2], ARGV[4], unpack(ARGV, 5 + i, 5 + math.min(i + 3999, n)))
  end
  k, a = 3, 6 + n
end
local verdicts, tools = {}, {}
while a <= #ARGV do
  local tool, n, prune = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2] == '1'
  a = a + 1
  local log_key, events_key, buckets_key = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  tools[#tools + 1] = tool
  -- The dedup: which ids the log already holds, one ZMSCORE for the batch (one ZADD NX per
  -- event was most of this script's time); an id twice in one batch counts once.
  local ids = {}
  for i = 1, n do ids[i] = ARGV[a + 2 + 3 * (i - 1)] end
  local known = call_all('ZMSCORE', log_key, ids)
  local seen, added = {}, {}
  -- A read model: the batch's counters are summed per hour here and written once per hour
  -- (three HINCRBYs per tool and hour for the whole batch, not three per event).
  local hours, sums = {}, {}
  for i = 1, n do
    local p = a + 2 + 3 * (i - 1)
    local id, occurred, signed = ARGV[p], tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2])
    if occurred < log_floor then
      verdicts[#verdicts + 1] = -1
    elseif known[i] or seen[id] then
      verdicts[#verdicts + 1] = 0
    else
      seen[id] = true
      added[#added + 1] = occurred
      added[#added + 1] = id
      local h = math.floor(occurred / 3600000)  -- a whole number: '..' writes it as digits
      local sum = sums[h]
      if sum == nil then
        sum = {0, 0, 0}
        sums[h] = sum
        hours[#hours + 1] = h
      end
      sum[1] = sum[1] + 1
      if signed >= 0 then
        sum[2] = sum[2] + 1
        sum[3] = sum[3] + signed
      else
        sum[3] = sum[3] - 1 - signed
      end
      verdicts[#verdicts + 1] = 1
    end
  end
  if #added > 0 then call_all('ZADD', log_key, added) end
  local fresh_hour = false
  for _, h in ipairs(hours) do
    local sum = sums[h]
    if redis.call('HINCRBY', buckets_key, h .. ':n', sum[1]) == sum[1] then fresh_hour = true end
    redis.call('HINCRBY', buckets_key, h .. ':ok', sum[2])
    redis.call('HINCRBY', buckets_key, h .. ':ms', sum[3])
  end
  if prune then
    local old = redis.call('ZRANGEBYSCORE', log_key, '-inf', '(' .. ARGV[1], 'LIMIT', 0, 500)
    if #old > 0 then
      redis.call('ZREM', log_key, unpack(old))
      redis.call('HDEL', events_key, unpack(old))
    end
  end
  if fresh_hour then
    local stale = {}
    for _, f in ipairs(redis.call('HKEYS', buckets_key)) do
      local hour = tonumber(string.match(f, '^(%d+):'))
      if hour and hour < bucket_floor then stale[#stale + 1] = f end
    end
    if #stale > 0 then redis.call('HDEL', buckets_key, unpack(stale)) end
  end
  k, a = k + 3, a + 2 + 3 * n
end
if direct and #tools > 0 then redis.call('SADD', KEYS[1], unpack(tools)) end
return verdicts
"""


PRUNE_EVERY_MS = 60_000


def now_ms() -> int:
    return int(time.time() * 1000)


class Parsed(NamedTuple):
    """One event as the projection counts it (a tuple: made per event, a frozen dataclass
    cost a microsecond to build)."""

    dedup: str
    tool: str
    occurred_ms: int
    ok: bool
    duration_ms: int


class _Event(msgspec.Struct, gc=False):
    """The fields of a ToolExecutionStreamEvent the projection reads, ``occurredAt`` parsed
    by msgspec (RFC 3339, as this runtime writes it); the rest of the event is skipped."""

    toolId: str
    publishedToolId: str
    durationMs: int
    success: bool
    occurredAt: datetime
    executionId: str = ""


_fast = msgspec.json.Decoder(_Event)


def parse_entry(entry_id: bytes, fields: dict[bytes, bytes]) -> Parsed | None:
    """One stream entry as a projection row; None when it is not a tool-execution event."""
    raw = fields.get(b"data")
    if raw is None:
        return None
    try:
        fast = _fast.decode(raw)
        occurred = int(fast.occurredAt.timestamp() * 1000)
        tool, dedup, ok, ms = fast.toolId or fast.publishedToolId, fast.executionId, \
            fast.success, fast.durationMs
    except (msgspec.DecodeError, ValueError, OverflowError):
        # An outside producer's event, its time in another form: read as before.
        try:
            event = _decode.decode(raw)
        except msgspec.DecodeError:
            return None
        try:
            occurred = int(datetime.fromisoformat(event.occurredAt).timestamp() * 1000)
        except ValueError:
            occurred = int(entry_id.split(b"-", 1)[0])
        tool, dedup, ok, ms = event.toolId or event.publishedToolId, event.executionId, \
            event.success, event.durationMs
    # Events of this runtime carry executionId; an outside producer's (the contract's shape)
    # may not, and then the stream entry id is the stable identity of a redelivery.
    return Parsed(dedup or f"entry:{entry_id.decode()}", tool, occurred, ok, max(0, ms))


class ExecutionLog:
    """Applies tool-execution events to the projection of namespace ``ns``."""

    def __init__(self, client: Client, keys: Keys, *, ns: str = "proj",
                 log_retention_ms: int = 8 * 86_400_000,
                 clock: Callable[[], int] = now_ms) -> None:
        self.client = client
        self.keys = keys
        self.ns = ns
        self.log_retention_ms = log_retention_ms
        self.clock = clock
        self._apply = client.register_script(_APPLY)
        # One node: the whole batch (every tool, the tools set, the ack) in one script call.
        # A cluster: one call per tool (its keys share a slot), then the SADDs and the XACK.
        self.direct = not isinstance(client, RedisCluster)
        self._pruned: dict[str, int] = {}  # tool -> when this process last pruned its log
        self.applied = 0
        self.duplicates = 0
        self.progress = GroupProgress(client, keys.executions, PROJECTION_GROUP)

    async def apply(self, entries: list[Entry]) -> int:
        """Apply entries (any order, any number of times); returns how many were new."""
        return await self.apply_rows(_rows(entries))

    async def apply_rows(self, rows: list[Parsed]) -> int:
        """Apply parsed events (from the stream, or runs read back from the history)."""
        return await self._run(rows, [])

    async def process(self, entries: list[Entry]) -> None:
        """The consumer-group handler: apply, then ack (a crash in between redelivers: harmless).
        On one node the ack is in the script that applies the batch: one round trip."""
        ids = [entry_id for entry_id, _ in entries]
        await self._run(_rows(entries), ids if self.direct else [])
        if ids and not self.direct:
            await self.client.xack(self.keys.executions, PROJECTION_GROUP, *ids)
        await self.progress.advanced()

    async def _run(self, rows: list[Parsed], ack: list[bytes]) -> int:
        if not rows and not ack:
            return 0
        now = self.clock()
        log_floor = now - self.log_retention_ms
        bucket_floor = now // HOUR_MS - WINDOW_HOURS - 24  # keep a day beyond the window
        by_tool: dict[str, list[Parsed]] = {}
        for r in rows:
            by_tool.setdefault(r.tool, []).append(r)
        calls = ([self._call(by_tool, log_floor, bucket_floor, ack, now)] if self.direct else
                 [self._call({tool: group}, log_floor, bucket_floor, [], now)
                  for tool, group in by_tool.items()])
        for attempt in (1, 2):
            try:
                replies = await self._execute(calls, [] if self.direct else list(by_tool))
                break
            except NoScriptError:
                if attempt == 2:
                    raise
                await self.client.script_load(_APPLY)  # every primary, on a cluster
        verdicts = [int(v) for reply in replies for v in reply]
        new = verdicts.count(1)
        self.applied += new
        self.duplicates += verdicts.count(0)
        return new

    def _prune(self, tool: str, now: int) -> bool:
        """Whether this call prunes ``tool``'s log: at most once a minute per tool and process
        (an id past the log floor is refused by the floor anyway; only its memory waits)."""
        if now < self._pruned.get(tool, -PRUNE_EVERY_MS) + PRUNE_EVERY_MS:
            return False
        if len(self._pruned) >= 4096:  # bounded: forgetting only prunes again
            self._pruned.clear()
        self._pruned[tool] = now
        return True

    def _call(self, by_tool: dict[str, list[Parsed]], log_floor: int, bucket_floor: int,
              ack: list[bytes], now: int) -> list[Any]:
        """The EVALSHA arguments of one script call (the layout above ``_APPLY``)."""
        k, ns = self.keys, self.ns
        keys: list[Any] = []
        args: list[Any] = [log_floor, bucket_floor, int(self.direct)]
        if self.direct:
            keys += [k.proj_tools(ns), k.executions]
            args += [PROJECTION_GROUP, len(ack), *ack]
        for tool, group in by_tool.items():
            keys += [k.proj_log(tool, ns), k.proj_events(tool, ns), k.proj_buckets(tool, ns)]
            args += [tool, len(group), int(self._prune(tool, now))]
            for r in group:
                args += [r.dedup, r.occurred_ms, r.duration_ms if r.ok else -1 - r.duration_ms]
        return ["EVALSHA", self._apply.sha, len(keys), *keys, *args]

    async def _execute(self, calls: list[list[Any]], tools: list[str]) -> list[Any]:
        if len(calls) == 1 and not tools:
            # One node: the reply read raw, without redis-py's client call around it.
            return await send_all(self.client, [tuple(calls[0])])
        # EVALSHA queued by hand: redis-py's ClusterPipeline refuses Script objects.
        async with self.client.pipeline(transaction=False) as pipe:
            for call in calls:
                pipe.execute_command(*call)
            for tool in tools:
                pipe.sadd(self.keys.proj_tools(self.ns), tool)
            replies = await pipe.execute()
        return list(replies[:len(calls)])

    async def caught_up(self) -> bool:
        return await self.progress.caught_up()

    async def wait_caught_up(self, timeout_s: float = 30.0) -> None:
        await self.progress.wait_caught_up(timeout_s)


def _rows(entries: list[Entry]) -> list[Parsed]:
    return [p for p in (parse_entry(i, f) for i, f in entries) if p is not None]


async def ensure_group(client: Client, keys: Keys) -> None:
    await ensure_stream_group(client, keys.executions, PROJECTION_GROUP)


async def drop(client: Client, keys: Keys, ns: str) -> int:
    """Delete every key of namespace ``ns``; returns how many tools it held."""
    tools = [t.decode() for t in await client.smembers(keys.proj_tools(ns))]
    async with client.pipeline(transaction=False) as pipe:
        for tool in tools:
            pipe.delete(keys.proj_log(tool, ns), keys.proj_events(tool, ns),
                        keys.proj_buckets(tool, ns))
        pipe.delete(keys.proj_tools(ns))
        await pipe.execute()
    return len(tools)


Progress = Callable[[int, int], None]


async def rebuild(client: Client, keys: Keys, *, ns: str = "proj",
                  log_retention_ms: int = 8 * 86_400_000, clock: Callable[[], int] = now_ms,
                  progress: Progress | None = None, page: int = 500,
                  history: AsyncIterable[list[Parsed]] | None = None) -> int:
    """Drop namespace ``ns`` and replay the whole source stream into it; returns events read.

    ``history``: runs read back from the run history (``handlers.history.queries.
    metric_rows``), applied first, so buckets older than the stream's retention come back too;
    a run in both is counted once (the dedup is the execution id either way).

    Safe while live consumers write the same namespace: everything is deduplicated by
    executionId, and the replay reads up to the stream's end, so an event is counted
    by the replay, by the live consumer, or by both, once.
    """
    await drop(client, keys, ns)
    projection = ExecutionLog(client, keys, ns=ns, log_retention_ms=log_retention_ms,
                              clock=clock)
    if history is not None:
        async for rows in history:
            await projection.apply_rows(rows)
    total = int(await client.xlen(keys.executions))
    done = 0
    cursor = "-"
    while True:
        batch = await client.xrange(keys.executions, min=cursor, max="+", count=page)
        if not batch:
            break
        await projection.apply(batch)
        done += len(batch)
        if progress is not None:
            progress(done, max(total, done))
        last = batch[-1][0].decode()
        cursor = "(" + last
        if len(batch) < page:
            break
    return done


async def snapshot(client: Client, keys: Keys, *, ns: str = "proj",
                   now: Any = None) -> dict[str, Any]:
    """Everything a reader sees of namespace ``ns``: per tool, its 7-day metrics and its log."""
    tools = sorted(t.decode() for t in await client.smembers(keys.proj_tools(ns)))
    metrics = await tool_metrics(client, keys, tools, to_ms(now), ns=ns)
    out: dict[str, Any] = {}
    for tool in tools:
        entries = await client.zrange(keys.proj_log(tool, ns), 0, -1, withscores=True)
        out[tool] = {"metrics": metrics[tool],
                     "log": [(m.decode(), int(s)) for m, s in entries]}
    return out


async def trim_source(client: Client, keys: Keys, *, retention_ms: int, unread_max_ms: int = 0,
                      now: int | None = None) -> int:
    """MINID-trim ``stream:tool-executions`` to ``retention_ms``, never past what any consumer
    group (the metrics projection, the run history, any other reader) has yet to process: its
    last-delivered id and its oldest pending entry.

    A reader stopped for good would hold the stream forever, so ``unread_max_ms`` (when > 0)
    bounds the wait: entries older than that are trimmed even if unread. That loss is logged
    as an error naming the groups and counted in ``chatflow_executions_trimmed_unread_total``
    (docs/history.md "Source retention"). Returns the entries trimmed."""
    if retention_ms <= 0:
        return 0
    clock = now if now is not None else now_ms()
    floor = clock - retention_ms
    behind: dict[str, int] = {}  # group -> the ms of the oldest entry it still needs
    for group in await client.xinfo_groups(keys.executions):
        name = text(group.get("name"))
        needs = _id_ms(text(group.get("last-delivered-id")) or "0-0")
        if int(group.get("pending") or 0):
            pending = await client.xpending(keys.executions, name)
            needs = min(needs, _id_ms(text(pending.get("min")) or "0-0"))
        behind[name] = needs
    safe = min([floor, *behind.values()])
    trimmed = 0
    if safe > 0:
        trimmed = int(await client.xtrim(keys.executions, minid=f"{safe}-0", approximate=False))
    hard = clock - unread_max_ms
    if unread_max_ms > 0 and safe < min(floor, hard):
        lost = int(await client.xtrim(keys.executions, minid=f"{min(floor, hard)}-0",
                                      approximate=False))
        if lost:
            late = sorted(g for g, ms in behind.items() if ms < hard)
            TRIMMED_UNREAD.inc(lost)
            log.error("execution events trimmed before every group read them", lost=lost,
                      groups=late, unread_max_s=unread_max_ms // 1000,
                      fix="restart the reader (for the history: a worker with "
                          "CHATFLOW_HISTORY_URL), or XGROUP DESTROY a group nobody reads any more")
        trimmed += lost
    return trimmed


def _id_ms(entry: str) -> int:
    return entry_id(entry)[0]

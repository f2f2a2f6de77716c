"""Prometheus metrics of the runtime, and the few hooks the core calls.

Every label set is bounded: tools are the first ``max_tools`` publishedToolIds a
process sees (the rest are ``other``; ids of no published tool are all ``unknown``), block
types and guardrail kinds come from fixed sets, and error codes must be snake_case and are capped as well.

Exposition with several worker processes: every process keeps its own registry
and serves it on its own port (``--metrics-port P`` gives process i port P+i),
and Prometheus scrapes each process as a target. No multiprocess directory, no
pid-file cleanup, and the XINFO gauges are read live at scrape time, which
prometheus_client's multiprocess mode cannot do (docs/operations.md).
"""

from __future__ import annotations

import asyncio
import bisect
import re
import threading
import time
from collections import Counter as Tally
from collections.abc import Awaitable, Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

import msgspec
import structlog
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.samples import Exemplar

from chatflow.runtime.errors import ErrorCode
from chatflow.schemas.wire import LlmUsageEvent

from ..keys import Keys, origin_of
from ..redis_client import Client

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

BLOCK_TYPES = frozenset({"httpCall", "executeScript", "callEndpoint", "callTool", "fetchMedia",
                         "callAI", "return"})
GUARDRAILS = {"tool_timeout": "timeout", "tool_loop": "hops", "tool_cycle": "cycle",
              "tool_depth_exceeded": "depth", "tool_invocations_exceeded": "invocations",
              "render_too_large": "render_size", "http_response_too_large": "response_size",
              "http_body_too_large": "response_size", "ai_output_too_large": "ai_output_size",
              "script_result_too_large": "script_result_size",
              "variables_too_large": "variables_size"}
_CODE = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
OTHER = "other"
UNKNOWN = "unknown"  # executions of publishedToolIds that do not exist
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class BoundedLabel:
    """Admits the first ``cap`` distinct values (that ``allowed`` accepts); the rest are 'other'."""

    def __init__(self, cap: int, allowed: re.Pattern[str] | None = None,
                 seed: Iterable[str] = ()) -> None:
        self.cap = cap
        self.allowed = allowed
        self._known: set[str] = set(seed)
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        if not value:
            return OTHER
        if value in self._known:
            return value
        if self.allowed is not None and not self.allowed.match(value):
            return OTHER
        with self._lock:
            if len(self._known) >= self.cap:
                return OTHER
            self._known.add(value)
        return value


# Every code a tool can fail with (the rows of runtime/errors.py's table), so each
# `chatflow_errors_total{code=...}` series exists at 0 from a process's start: an alert on one
# (ChatflowTimeouts: tool_timeout) then has a series to evaluate before the first failure. A
# code no row names (a native tool's, a newer worker's) is still counted, as it comes.
ERROR_CODES = tuple(code.value for code in ErrorCode)

tool_label = BoundedLabel(50)
# Room for codes this list does not know yet (a native tool's, a newer worker's), then "other".
code_label = BoundedLabel(len(ERROR_CODES) + 50, _CODE, (*ERROR_CODES, *GUARDRAILS))

EXECUTIONS = Counter("chatflow_tool_executions_total",
                     "Tool executions (nested ones included) by tool and outcome",
                     ["tool", "outcome"], registry=REGISTRY)
EXECUTION_SECONDS = Histogram("chatflow_tool_execution_duration_seconds",
                              "Tool execution duration by tool and outcome", ["tool", "outcome"],
                              buckets=DURATION_BUCKETS, registry=REGISTRY)
BLOCK_STEPS = Counter("chatflow_block_steps_total", "Blocks run, by block type and outcome",
                      ["block_type", "outcome"], registry=REGISTRY)
BLOCK_SECONDS = Histogram("chatflow_block_duration_seconds", "Block duration by block type",
                          ["block_type"], buckets=DURATION_BUCKETS, registry=REGISTRY)
ERRORS = Counter("chatflow_errors_total", "Tool failures by error code", ["code"],
                 registry=REGISTRY)
GUARDRAIL_TRIPS = Counter("chatflow_guardrail_trips_total", "Guardrails that ended a tool",
                          ["kind"], registry=REGISTRY)
RESULTS = Counter("chatflow_results_total", "Commands answered, by outcome", ["outcome"],
                  registry=REGISTRY)
REAPER = Counter("chatflow_reaper_actions_total",
                 "Recovery actions: deadline timeouts, reclaimed entries, cancellations",
                 ["action"], registry=REGISTRY)
DEAD_LETTERS = Counter("chatflow_dead_letters_total", "Entries sent to stream:tool-dead-letters",
                       ["source"], registry=REGISTRY)
LLM_TOKENS = Counter("chatflow_llm_tokens_total", "LLM tokens used by callAI blocks",
                     ["capability", "kind"], registry=REGISTRY)
RELAYED = Counter("chatflow_relayed_messages_total", "Messages relayed to public streams",
                  ["kind"], registry=REGISTRY)
STALE = Counter("chatflow_commits_dropped_total",
                "Transitions not committed: stale steps, trees already answered, duplicates",
                ["reason"], registry=REGISTRY)
TRIMMED_UNREAD = Counter("chatflow_executions_trimmed_unread_total",
                         "stream:tool-executions entries trimmed before a consumer group (the "
                         "run history, the metrics projection) read them: lost to that reader",
                         registry=REGISTRY)
STREAM_LAG = Gauge("chatflow_stream_lag", "Entries not yet delivered to a group (XINFO lag)",
                   ["stream", "group"], registry=REGISTRY)
STREAM_PENDING = Gauge("chatflow_stream_pending", "Entries delivered but not acked (XINFO)",
                       ["stream", "group"], registry=REGISTRY)
STREAM_READ = Gauge("chatflow_stream_entries_read", "Entries read by a group (XINFO entries-read)",
                    ["stream", "group"], registry=REGISTRY)
STREAM_LENGTH = Gauge("chatflow_stream_length", "Stream length (XLEN)", ["stream"],
                      registry=REGISTRY)
INFLIGHT = Gauge("chatflow_executions_in_flight", "Root executions with a pending deadline",
                 registry=REGISTRY)
UP = Gauge("chatflow_worker_up", "1 while this process's subscribers run", registry=REGISTRY)
READY = Gauge("chatflow_worker_ready", "1 while this worker's /health/ready answers 200 "
              "(Valkey answers and takes writes, every reader reads); set at each scrape",
              registry=REGISTRY)

# Calls to the outside world (runtime/retry.py, handlers/dataplane/edge.py). ``server`` is an
# integration server's id or an origin of CHATFLOW_ORIGIN_LIMITS, bounded like tools.
HTTP_ATTEMPTS = Counter("chatflow_http_attempts_total",
                        "Attempts of blocks that call out over HTTP (httpCall, callEndpoint, "
                        "fetchMedia, callAI) by tool and outcome: ok, retried (failed, another "
                        "attempt is scheduled), failed (the block's last attempt failed)",
                        ["tool", "outcome"], registry=REGISTRY)
RATE_LIMIT_WAITS = Counter("chatflow_rate_limit_waits_total",
                           "Calls that waited for their turn under a rate or concurrency limit "
                           "(an integration server's limits, CHATFLOW_ORIGIN_LIMITS)",
                           registry=REGISTRY)
CIRCUIT_STATE = Gauge("chatflow_circuit_state",
                      "A circuit breaker's shared state: 0 closed, 1 half-open, 2 open; read "
                      "from Valkey at scrape time for the circuits this process has used",
                      ["server"], registry=REGISTRY)
CIRCUIT_TRANSITIONS = Counter("chatflow_circuit_transitions_total",
                              "Circuit breaker transitions made by this process, by the state "
                              "entered (open, half_open, closed)", ["server", "to"],
                              registry=REGISTRY)
server_label = BoundedLabel(50)
CIRCUIT_STATES = {"closed": 0, "half_open": 1, "open": 2}


# Attempts since the last commit batch: a plain tally per call (a dict increment), added to
# the counter by observe_commits once per distinct (tool, outcome). A counter's labels, lock
# and fork mapping per call were 3 % of an http-3 execution's instructions.
_attempts: Tally[tuple[str, str]] = Tally()


def http_attempt(published_tool_id: str, outcome: str) -> None:
    _attempts[published_tool_id, outcome] += 1


def _flush_attempts() -> None:
    tallied = list(_attempts.items())
    _attempts.clear()
    for (published, outcome), n in tallied:
        # A fork's attempts count under the tool it forked, as its executions do.
        _adder(HTTP_ATTEMPTS, (tool_label(origin_of(published)), outcome))(n)


def rate_limit_waited() -> None:
    RATE_LIMIT_WAITS.inc()


def circuit_moved(server: str, to: str) -> None:
    label = server_label(server)
    CIRCUIT_TRANSITIONS.labels(label, to).inc()
    CIRCUIT_STATE.labels(label).set(CIRCUIT_STATES.get(to, 0))


def circuit_seen(server: str, state: str) -> None:
    CIRCUIT_STATE.labels(server_label(server)).set(CIRCUIT_STATES.get(state, 0))


TREE_END_REASONS = ("deadline_timeout", "dead_lettered", "cancelled")

# The series alerts read start at 0 (deploy/prometheus/alerts.yml): a rate over a series that
# does not exist yet is no value at all, and an alert on it could never fire.
for _code in ERROR_CODES:
    ERRORS.labels(_code)
for _kind in sorted(set(GUARDRAILS.values())):
    GUARDRAIL_TRIPS.labels(_kind)
for _outcome in ("ok", "error"):
    RESULTS.labels(_outcome)


class SharedCounters:
    """Counters kept in Redis, so every process exposes the same value (aggregate with
    ``max``): trees ended from outside the machine, by reason (handlers/dataplane/trees.py). A cancel
    runs in the CLI or the API, whose own registries no worker's ``/metrics`` would show."""

    def __init__(self) -> None:
        self.trees_ended: dict[str, int] = {}

    def describe(self) -> list[CounterMetricFamily]:
        return [self._family()]

    def collect(self) -> list[CounterMetricFamily]:
        return [self._family()]

    def _family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(
            "chatflow_trees_ended", "Trees ended from outside the state machine, by reason "
            "(deadline_timeout, dead_lettered, cancelled); read from Redis at scrape time",
            labels=["reason"])
        for reason, n in sorted(self.trees_ended.items()):
            family.add_metric([reason], n)
        return family


SHARED = SharedCounters()
REGISTRY.register(SHARED)

class _Executed(msgspec.Struct, gc=False):
    """The fields of a ToolExecutionStreamEvent the metrics read; the rest is skipped."""

    publishedToolId: str
    success: bool
    durationMs: int
    errorCode: str | None = None


class _Answered(msgspec.Struct, gc=False):
    ok: bool = False


_exec = msgspec.json.Decoder(_Executed)
_usage = msgspec.json.Decoder(LlmUsageEvent)
_result_ok = msgspec.json.Decoder(_Answered)
_DROPPED = {0: "already_answered", -1: "stale", 2: "duplicate_command", 3: "wrong_key_type"}


def configure(max_tools: int) -> None:
    tool_label.cap = max_tools
    server_label.cap = max_tools


def observe_commits(commits: Sequence[Any], verdicts: Sequence[int], tracing: Any = None) -> None:
    """Count what committed transitions did: runs, blocks, errors, guardrails, tokens.

    Called after ``Store.commit`` with its verdicts; a dropped transition counts nothing.
    Once per commit batch, not per transition: the walk over the batch only gathers raw
    values in flat lists (a block entry's ``(blockType, ok, ms)``, an error's code, the
    emits); they are then tallied by value (a batch of one-hop trees has a handful of
    distinct ones), the emits decoded, labels resolved, and every label set's ``inc`` (a
    lock each) made once per distinct key. Per transition the metrics were 8.5% of a
    bench-3 worker's CPU.
    """
    if _attempts:
        _flush_attempts()
    blocks, codes, emits, dropped = _gather(commits, verdicts)
    counts: dict[tuple[Any, tuple[str, ...]], float] = {}
    seconds: dict[tuple[Any, tuple[str, ...]], dict[int, int]] = {}
    for verdict, n in _by_value(dropped):
        _count(counts, STALE, _DROPPED.get(verdict, "other"), n=n)
    for (block_type, ok, ms), n in _by_value(blocks):
        label = block_type if block_type in BLOCK_TYPES else OTHER
        _count(counts, BLOCK_STEPS, label, "ok" if ok else "error", n=n)
        _tally(seconds, BLOCK_SECONDS, (label,), ms or 0, n)
    for code, n in _by_value(codes):
        _count(counts, ERRORS, code_label(code), n=n)
        if code in GUARDRAILS:
            _count(counts, GUARDRAIL_TRIPS, GUARDRAILS[code], n=n)
    _observe_emits(emits, counts, seconds)
    for (metric, labels), amount in counts.items():
        _adder(metric, labels)(amount)
    for (metric, labels), by_ms in seconds.items():
        _observe_tally(_child(metric, *labels), {ms / 1000: n for ms, n in by_ms.items()})
    if tracing is not None:
        _exemplars(commits, verdicts, tracing)


def _exemplars(commits: Sequence[Any], verdicts: Sequence[int], tracing: Any) -> None:
    """Tracing on: the duration buckets a sampled tree's blocks and executions fell in carry
    its trace id as an OpenMetrics exemplar (``trace_id``, the label Grafana links by).

    A bucket keeps only its latest exemplar, so of one batch only the last observation of each
    bucket is set: the batch is walked from its end (setting every one cost a tenth of a bench-3
    worker's CPU, and left the same exemplars); an unsampled tree's commit is skipped before
    its observations are looked at."""
    now = time.time()
    claimed: set[tuple[int, int]] = set()  # (histogram child, bucket) given this batch's last
    for commit, verdict in reversed(list(zip(commits, verdicts, strict=False))):
        t = getattr(commit, "transition", None)
        if t is None or verdict != 1 or not t.writes:
            continue
        trace_id = tracing.trace_id_of(t.writes[-1])  # a remembered decision: a dict lookup
        if trace_id is None:
            continue  # not sampled: no exemplar of this commit
        labels = {"trace_id": trace_id}
        for child, value in reversed(_observed(t)):
            bucket = _bucket_of(child, value)
            if bucket is None or bucket in claimed:
                continue
            claimed.add(bucket)
            child._buckets[bucket[1]].set_exemplar(Exemplar(labels, value, now))


def _observed(t: Any) -> list[tuple[Any, float]]:
    """The (histogram child, seconds) a committed transition observed, in order."""
    out = []
    for entry in t.log:
        if entry.type == "block":
            label = entry.blockType if entry.blockType in BLOCK_TYPES else OTHER
            out.append((_child(BLOCK_SECONDS, label), (entry.durationMs or 0) / 1000))
    for emit in t.emits:
        if emit.kind == "execution" and emit.facts is not None:
            published, success, code, ms = emit.facts  # (execution_emit's facts)
            tool = UNKNOWN if code == "tool_not_found" else tool_label(published)
            out.append((_child(EXECUTION_SECONDS, tool, "success" if success else "failure"),
                        ms / 1000))
    return out


def _bucket_of(child: Any, value: float) -> tuple[int, int] | None:
    """(the child's id, the index of the bucket ``value`` falls in), or None."""
    bounds, buckets = getattr(child, "_upper_bounds", None), getattr(child, "_buckets", None)
    if bounds is None or buckets is None:
        return None
    i = bisect.bisect_left(bounds, value)
    return (id(child), i) if i < len(buckets) else None


def _gather(commits: Sequence[Any], verdicts: Sequence[int]) -> tuple[
        list[tuple[Any, Any, Any]], list[str], list[Any], list[int]]:
    """The raw values the metrics count, walked once: block entries' ``(blockType, ok,
    ms)``, the error codes that ended an execution, the emits, the dropped verdicts."""
    blocks: list[tuple[Any, Any, Any]] = []
    codes: list[str] = []
    emits: list[Any] = []
    dropped: list[int] = []
    for commit, verdict in zip(commits, verdicts, strict=False):
        t = getattr(commit, "transition", None)
        if t is None:
            continue
        if verdict != 1:
            dropped.append(verdict)
            continue
        try:
            for entry in t.log:
                kind = entry.type
                if kind == "block":
                    blocks.append((entry.blockType, entry.ok, entry.durationMs))
                elif entry.error is not None and (kind == "finished" or kind == "aborted"):
                    codes.append(entry.error.code)
            emits += t.emits
        except AttributeError:  # metrics never break a commit
            continue
    return blocks, codes, emits, dropped


def _observe_emits(emits: list[Any], counts: dict[tuple[Any, tuple[str, ...]], float],
                   seconds: dict[tuple[Any, tuple[str, ...]], dict[int, int]]) -> None:
    # The runtime's emits carry their facts; one built elsewhere (or by an older runtime) is
    # decoded.
    executed = [e.facts for e in emits if e.kind == "execution" and e.facts is not None]
    executed += map(_EXECUTED, _decoded(_exec, [e.data for e in emits
                                                if e.kind == "execution" and e.facts is None]))
    for (published, success, code, ms), n in _by_value(executed):
        outcome = "success" if success else "failure"
        # A publishedToolId the registry does not know is not a tool: one label for all,
        # so commands naming made-up ids cannot use up the per-tool label slots.
        # A fork counts under the tool it forked: forks take no label slots of their own.
        tool = UNKNOWN if code == "tool_not_found" else tool_label(origin_of(published))
        _count(counts, EXECUTIONS, tool, outcome, n=n)
        _tally(seconds, EXECUTION_SECONDS, (tool, outcome), ms, n)
    oks = [e.facts for e in emits if e.kind == "result" and e.facts is not None]
    oks += [r.ok for r in _decoded(_result_ok, [e.data for e in emits
                                                if e.kind == "result" and e.facts is None])]
    for ok, n in _by_value(oks):
        _count(counts, RESULTS, "ok" if ok else "error", n=n)
    for usage in _decoded(_usage, [e.data for e in emits if e.kind == "llm_usage"]):
        capability = usage.capability if _CODE.match(usage.capability.lower()) else OTHER
        _count(counts, LLM_TOKENS, capability, "prompt", n=usage.promptTokens)
        _count(counts, LLM_TOKENS, capability, "completion", n=usage.completionTokens)


_EXECUTED = attrgetter("publishedToolId", "success", "errorCode", "durationMs")


def _by_value(items: list[Any]) -> Iterable[tuple[Any, int]]:
    """``(value, how many times)`` for each distinct value of ``items`` (most lists of a batch
    are empty: no dropped commit, no error; a Counter costs a few µs even then)."""
    return Tally(items).items() if items else ()


def _tally(seconds: dict[tuple[Any, tuple[str, ...]], dict[int, int]], metric: Any,
           labels: tuple[str, ...], ms: int, n: int) -> None:
    by_ms = seconds.setdefault((metric, labels), {})
    by_ms[ms] = by_ms.get(ms, 0) + n


def _decoded(decoder: Any, raws: list[bytes]) -> list[Any]:
    """Each of ``raws`` decoded; a malformed one counts nothing."""
    out = []
    for raw in raws:
        try:
            out.append(decoder.decode(raw))
        except (msgspec.DecodeError, ValueError):
            continue
    return out


def observe_batch(child: Any, values: list[float]) -> None:
    """``child.observe(v)`` for each of ``values``, with one ``inc`` per bucket and one on
    the sum instead of two per value."""
    _observe_tally(child, Tally(values))


def _observe_tally(child: Any, tally: dict[float, int]) -> None:
    """``child.observe(v)`` ``n`` times for each ``v: n`` of ``tally``. Reads the histogram's
    buckets (prometheus_client has no batch observe); a client without them gets the loop."""
    bounds = getattr(child, "_upper_bounds", None)
    buckets = getattr(child, "_buckets", None)
    total = getattr(child, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for value, n in tally.items():
            for _ in range(n):
                child.observe(value)
        return
    hits: dict[int, int] = {}
    for value, n in tally.items():
        i = bisect.bisect_left(bounds, value)  # observe(): the first bound >= value
        if i < len(bounds):
            hits[i] = hits.get(i, 0) + n
    total.inc(sum(value * n for value, n in tally.items()))
    for i, n in hits.items():
        buckets[i].inc(n)


def _count(counts: dict[tuple[Any, tuple[str, ...]], float], metric: Any, *labels: str,
           n: float = 1) -> None:
    key = (metric, labels)
    counts[key] = counts.get(key, 0) + n


_children: dict[tuple[int, tuple[str, ...]], Any] = {}


def _child(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, memoised: ``labels()`` takes a lock and rebuilds the key
    on every call, a visible share of a worker's CPU at thousands of steps per second.
    Label sets are bounded (module docstring), so the memo is too."""
    key = (id(metric), values)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*values)
    return child


_adders: dict[tuple[int, tuple[str, ...]], Callable[[float], None]] = {}


def _adder(metric: Any, labels: tuple[str, ...]) -> Callable[[float], None]:
    """The ``inc`` of a counter's label set, memoised: its value's own ``inc`` (one lock),
    past ``Counter.inc``'s checks (a non-negative amount, an observable metric: both hold
    for every count here); a client without it gets ``inc``."""
    key = (id(metric), labels)
    add = _adders.get(key)
    if add is None:
        child = _child(metric, *labels)
        fast = getattr(getattr(child, "_value", None), "inc", None)
        add = _adders[key] = fast if callable(fast) else child.inc
    return add


def reaper_action(action: str, n: int = 1) -> None:
    if n > 0:
        REAPER.labels(action).inc(n)


def dead_letter(source: str, n: int = 1) -> None:
    if n > 0:
        DEAD_LETTERS.labels(source).inc(n)


def relayed(kinds: Iterable[bytes]) -> None:
    for kind in kinds:
        RELAYED.labels(kind.decode() if kind in (b"result", b"execution", b"debug",
                                                  b"llm_usage") else OTHER).inc()


def exposition() -> bytes:
    return generate_latest(REGISTRY)


def negotiated(accept: str) -> tuple[bytes, str]:
    """The exposition in the format the scraper's Accept header asks for (OpenMetrics, with
    exemplars, or Prometheus text), and its content type."""
    encoder, content_type = choose_encoder(accept)
    if not content_type.startswith("application/openmetrics-text"):
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST  # as before negotiation
    return encoder(REGISTRY), content_type


async def refresh_streams(client: Client, keys: Keys) -> None:
    """Read XINFO GROUPS / XLEN of every stream the runtime consumes into the stream gauges.

    Labels use the logical name (``steps:3``, not the prefixed key), so they stay bounded.
    """
    streams = [(keys.commands, "tool-commands"), (keys.executions, "tool-executions")]
    for n in range(keys.partitions):
        streams += [(keys.steps(n), f"steps:{n}"), (keys.outbox(n), f"outbox:{n}")]
    async with client.pipeline(transaction=False) as pipe:
        for key, _name in streams:
            pipe.xinfo_groups(key)
        for key in (keys.commands, keys.results, keys.executions, keys.dead_letters):
            pipe.xlen(key)
        for n in range(keys.partitions):
            pipe.zcard(keys.deadlines(n))
        pipe.hgetall(keys.trees_ended)
        replies = await pipe.execute(raise_on_error=False)
    ended = replies.pop()
    if not isinstance(ended, Exception):
        stored = {_text(k): int(v) for k, v in ended.items()}
        SHARED.trees_ended = {reason: stored.get(reason, 0) for reason in TREE_END_REASONS}
    for (_key, name), groups in zip(streams, replies, strict=False):
        if not isinstance(groups, Exception):  # else the stream does not exist yet
            _set_groups(name, groups)
    lengths = replies[len(streams):len(streams) + 4]
    for name, length in zip(("tool-commands", "tool-results", "tool-executions",
                             "tool-dead-letters"), lengths, strict=True):
        if not isinstance(length, Exception):
            STREAM_LENGTH.labels(name).set(int(length))
    INFLIGHT.set(sum(int(x) for x in replies[len(streams) + 4:] if not isinstance(x, Exception)))


def _set_groups(name: str, groups: list[dict[str, Any]]) -> None:
    for group in groups:
        gname = _text(group.get("name"))
        STREAM_PENDING.labels(name, gname).set(int(group.get("pending") or 0))
        lag = group.get("lag")
        if lag is not None:
            STREAM_LAG.labels(name, gname).set(int(lag))
        read = group.get("entries-read")
        if read is not None:
            STREAM_READ.labels(name, gname).set(int(read))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def asgi_app(refresh: Callable[[], Awaitable[None]] | None = None) -> Any:
    """``/metrics`` for an ASGI app (the API): ``app.mount("/metrics", metrics.asgi_app())``.

    ``refresh`` runs before each scrape (the API passes ``refresh_streams`` on its client),
    so the Redis-derived values agree with every worker's; a failed refresh still answers."""
    from prometheus_client import make_asgi_app

    inner = make_asgi_app(registry=REGISTRY)
    if refresh is None:
        return inner

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            try:
                await asyncio.wait_for(refresh(), timeout=5)
            except Exception as exc:  # the scrape answers with the last values
                structlog.get_logger("chatflow.metrics").warning(
                    "stream gauges not refreshed", error=str(exc))
        await inner(scope, receive, send)

    return app

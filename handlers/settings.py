"""Settings from the environment (``CHATFLOW_*``, plus ``REDIS_URL``).

The one module of the service (``chatflow.handlers``, ``chatflow.runtime``) that reads the
environment: everything else is handed a :class:`Settings` or what it builds (limits, the
Outbound, the sandbox's child environment). The SDK has its own single reader,
``chatflow_agent/settings.py``; tests/test_environment.py keeps both rules.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from glob import escape
from typing import TYPE_CHECKING, Literal

from pydantic import AliasChoices, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from chatflow.runtime.egress import EgressPolicy
from chatflow.runtime.errors import ConfigurationError
from chatflow.runtime.limits import Limits

DEFAULT_REPLY_STREAMS = "stream:tool-results,stream:tool-results:*"


def reply_matcher(prefix: str, patterns: str) -> Callable[[str], bool]:
    """Whether a command's ``replyTo`` may name a stream: ``patterns`` is comma-separated
    fnmatch patterns, each under the key ``prefix`` (CHATFLOW_REPLY_STREAMS)."""
    full = [escape(prefix) + p.strip() for p in patterns.split(",") if p.strip()]
    return lambda stream: any(fnmatchcase(stream, pattern) for pattern in full)
if TYPE_CHECKING:  # imported by the methods: the CLI reads Settings without the block executors
    from chatflow.runtime.blocks.ai import AIConfig
    from chatflow.runtime.blocks.media import MediaConfig
    from chatflow.runtime.outbound import Outbound
    from chatflow.schemas.edge import OriginLimits


# CHATFLOW_EVENT_LOOP's values (handlers/operations/loop.py reads them).
EventLoopChoice = Literal["auto", "uvloop", "asyncio"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CHATFLOW_", extra="ignore")

    # repr=False: the URL may carry a password, and a repr ends up in logs and tracebacks.
    redis_url: str | None = Field(default=None, repr=False,
                                  validation_alias=AliasChoices("REDIS_URL", "CHATFLOW_REDIS_URL"))
    redis_cluster: bool = False
    prefix: str = ""
    partitions: int = Field(default=4, ge=1, le=1024)
    batch_size: int = Field(default=64, ge=1, le=1000)
    inflight_batches: int = Field(default=4, ge=1, le=64)
    # How long one XREADGROUP waits for an entry. It returns as soon as one arrives, so a
    # longer wait costs no latency; it only sets an idle worker's read rate (docs/operations.md).
    block_ms: int = Field(default=5000, ge=1)
    # Generation-0 threshold of Python's cyclic GC in worker processes (0: Python's 700).
    # At 700 the collector ran ~70 times per 1,000 executions and took a fifth of a
    # worker's CPU; nearly everything a step allocates is freed by refcounting anyway.
    gc_threshold: int = Field(default=10_000, ge=0)
    # The loop of workers, the API and the projections: uvloop when installed ("auto"),
    # or "uvloop" / "asyncio" (handlers/operations/loop.py says why and what it saves).
    event_loop: EventLoopChoice = "auto"
    # A pending entry is reclaimed once idle this long. Its owner renews the lease of every
    # entry it works on (XCLAIM ... JUSTID) every lease_renew_ms (0: a third of claim_idle_ms),
    # so only a dead or stuck worker's entries ever get that idle (handlers/dataplane/leases.py).
    claim_idle_ms: int = Field(default=15_000, ge=100)
    lease_renew_ms: int = Field(default=0, ge=0)
    # Recovery polls, sized to their windows when 0 (the default): reclaim every third of
    # claim_idle_ms, deadlines every thirtieth of tool_timeout_ms (100 ms to 1 s).
    claim_interval_ms: int = Field(default=0, ge=0)
    reaper_interval_ms: int = Field(default=0, ge=0)
    max_deliveries: int = Field(default=5, ge=1)
    debug_maxlen: int = Field(default=1000, ge=1)
    # A contact's debug stream expires this long after its last event: commands may name any
    # contact, and a stream nobody debugs any more must not stay for ever.
    debug_ttl_s: int = Field(default=86_400, ge=1)
    # Where a command's replyTo may point: comma-separated stream-name patterns (fnmatch),
    # each under the key prefix. Anything else is answered invalid_command on the default
    # result stream: a replyTo must never write into an internal key (stream:registry...).
    reply_streams: str = DEFAULT_REPLY_STREAMS
    # Approximate MAXLEN of the public streams nobody in the runtime consumes (0: unbounded).
    # With `noeviction` an unbounded stream grows until Valkey refuses writes (docs/scale.md,
    # "Memory"); consumers that fall further behind than this lose the oldest entries.
    results_maxlen: int = Field(default=100_000, ge=0)
    dead_letters_maxlen: int = Field(default=2_000, ge=0)  # each up to ~64 KiB
    llm_usage_maxlen: int = Field(default=100_000, ge=0)
    executions_maxlen: int = Field(default=0, ge=0)  # bounded by executions_retention_s
    dedup_ttl_s: int = Field(default=86_400, ge=60)
    state_ttl_s: int = Field(default=3_600, ge=60)
    marker_ttl_s: int = Field(default=900, ge=60)
    script_timeout_ms: int = Field(default=1000, ge=1)
    script_max_memory_mb: int = Field(default=64, ge=4)
    # V8 lanes per process (one context, thread and worker process each), shared fairly
    # between tools; 0 means one per core.
    script_lanes: int = Field(default=0, ge=0, le=256)
    tool_timeout_ms: int = Field(default=30_000, ge=100)
    max_hops: int = Field(default=50, ge=1)
    max_depth: int = Field(default=5, ge=0)
    max_invocations: int = Field(default=50, ge=0)
    http_timeout_ms: int = Field(default=10_000, ge=1)
    # Outbound HTTP connections per worker process (httpCall, callEndpoint, fetchMedia,
    # callAI share one pool). A block waiting for a free connection waits inside its own
    # timeout; slow endpoints at high rates need a bigger pool or more processes.
    http_max_connections: int = Field(default=100, ge=1)
    # What one execution may store and how long a regex rule's text may be (runtime/limits.py,
    # docs/security.md "What an execution stores"): over a cap is a block error (onError).
    regex_max_text_bytes: int = Field(default=64 * 1024, ge=1)
    script_result_max_bytes: int = Field(default=1024 * 1024, ge=1)
    variables_max_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    log_value_max_bytes: int = Field(default=16 * 1024, ge=256)  # longer: truncated, size noted
    # Ops (docs/operations.md): projections, source-stream retention, metrics endpoint.
    projections_enabled: bool = True
    # MINID trim; 0 keeps all. 8 days: a rebuild from the stream alone restores the 7-day metrics
    executions_retention_s: int = Field(default=8 * 86_400, ge=0)
    # ...but never past what a consumer group (history, metrics) has not read, unless it is
    # older than this: then it is trimmed, logged and counted as lost (docs/history.md).
    executions_unread_max_s: int = Field(default=7 * 86_400, ge=0)  # 0: wait for ever
    # The metrics projection's dedup log: 7 days + 1 (no audit rows in Valkey: docs/history.md)
    projection_log_retention_s: int = Field(default=8 * 86_400, ge=8 * 86_400)
    # Run history in SQL (handlers/history, docs/history.md): sqlite:///path or
    # postgresql://...; empty: no history (`chatflow up` sets a SQLite file in its data dir).
    history_url: str = Field(default="", repr=False)  # may carry a password
    history_trace_retention_s: int = Field(default=7 * 86_400, ge=3_600)
    history_run_retention_s: int = Field(default=90 * 86_400, ge=86_400)
    history_prune_batch: int = Field(default=1_000, ge=1, le=100_000)
    history_prune_interval_s: int = Field(default=300, ge=1)
    # Workers refuse a database behind the migrations; this applies them instead (`chatflow
    # up` sets it for its own SQLite file; elsewhere run `chatflow history upgrade`).
    history_auto_migrate: bool = False
    # `chatflow up` writes .chatflow/up.json where it runs (its Valkey, history, keys, API), and
    # every command run in that folder or below reads it for what the environment leaves unset
    # (handlers/cli/local_up.py). Off: neither (the test suite runs with it off).
    up_file: bool = True
    metrics_port: int = Field(default=0, ge=0, le=65535)  # 0: no /metrics server
    # Where /metrics listens; empty: where the API listens (CHATFLOW_API_HOST, loopback by
    # default), so a scrape port is never more exposed than the API unless asked.
    metrics_host: str = ""
    metrics_max_tools: int = Field(default=50, ge=1, le=10_000)
    # fetchMedia / callAI (runtime/blocks/media.py, ai.py)
    graph_base_url: str = "https://graph.facebook.com"
    graph_version: str = "v21.0"
    media_max_bytes: int = Field(default=25 * 1024 * 1024, ge=1)
    llm_timeout_ms: int = Field(default=60_000, ge=1)
    # Egress policy of httpCall, callEndpoint, fetchMedia, callAI (runtime/egress.py,
    # docs/security.md): comma-separated hosts, addresses, CIDRs; "default" = metadata/link-local.
    egress_allow: str = ""
    egress_deny: str = "default"
    # Outbound HTTP (docs/http.md). production: loopback/private/link-local denied unless in
    # egress_allow; development (default): only egress_deny. Printed by worker/api/up at start.
    egress_profile: Literal["development", "production"] = "development"
    http_ca_file: str = ""  # extra CA bundle (PEM) Outbound trusts, besides Mozilla's roots
    http_max_body_bytes: int = Field(default=10 * 1024 * 1024, ge=1)  # httpCall/callEndpoint
    # Limits and circuit breakers per origin for plain httpCall, shared by every worker and
    # fairly by the workspaces calling it (docs/http.md): a JSON object, origin -> {
    # "requestsPerSecond", "burst", "maxConcurrent", "circuitBreaker"}; empty: none.
    origin_limits: str = ""
    ai_max_output_bytes: int = Field(default=1024 * 1024, ge=1)  # callAI's output, UTF-8 bytes
    # HTTP API and registry (docs/registry.md)
    api_base_path: str = "/api"
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8080, ge=0, le=65535)
    internal_secret: str | None = None
    # Limits and exposure of the HTTP API (docs/security.md)
    api_max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    api_max_json_depth: int = Field(default=64, ge=4, le=1000)
    # Long requests (live-debug streams, ?wait=true forks, test runs): at most this many per
    # API key and per workspace across every API process, and per process, whose own Redis
    # pool for them has that many connections (handlers/api/held.py, docs/security.md).
    api_held_per_key: int = Field(default=8, ge=1)
    api_held_per_workspace: int = Field(default=32, ge=1)
    api_held_max: int = Field(default=128, ge=1)
    # `chatflow mcp --http` (one workspace per process): its live MCP sessions per API key and
    # in all, and how long an idle one is kept (handlers/interfaces/mcp_sessions.py).
    mcp_sessions_per_key: int = Field(default=8, ge=1)
    mcp_sessions_max: int = Field(default=64, ge=1)
    mcp_session_idle_s: float = Field(default=600.0, gt=0)
    # The largest definition a test run or a fork may run, JSON bytes (a fork's is stored with
    # its runs in the history until they are pruned).
    definition_max_bytes: int = Field(default=256 * 1024, ge=1024)
    # Host headers the API answers (Starlette TrustedHostMiddleware): comma-separated names,
    # "*.example.com" for subdomains; "*" answers any (behind a proxy, set the public name).
    api_allowed_hosts: str = "*"
    # Origins allowed by CORS, comma-separated; empty (the default): no CORS headers at all.
    api_cors_origins: str = ""
    encryption_key: str | None = None  # 64 hex chars (AES-256) for secret headers and API keys
    # Tracing (handlers/operations/tracing.py, docs/operations.md "Tracing"): OpenTelemetry's
    # own variables. Off unless an OTLP endpoint is set (or when OTEL_SDK_DISABLED=true or
    # OTEL_TRACES_EXPORTER=none); the exporter reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
    # _COMPRESSION and the rest itself.
    otel_endpoint: str = Field(default="", validation_alias=AliasChoices(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "otel_endpoint"))
    otel_traces_endpoint: str = Field(default="", validation_alias=AliasChoices(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "otel_traces_endpoint"))
    otel_sdk_disabled: bool = Field(default=False, validation_alias=AliasChoices(
        "OTEL_SDK_DISABLED", "otel_sdk_disabled"))
    otel_traces_exporter: str = Field(default="otlp", validation_alias=AliasChoices(
        "OTEL_TRACES_EXPORTER", "otel_traces_exporter"))
    otel_service_name: str = Field(default="", validation_alias=AliasChoices(
        "OTEL_SERVICE_NAME", "otel_service_name"))
    otel_traces_sampler: str = Field(default="parentbased_always_on", validation_alias=AliasChoices(
        "OTEL_TRACES_SAMPLER", "otel_traces_sampler"))
    otel_traces_sampler_arg: str = Field(default="", validation_alias=AliasChoices(
        "OTEL_TRACES_SAMPLER_ARG", "otel_traces_sampler_arg"))
    # The contact id on spans (chatflow.contact_id): personal data, so only when asked for.
    trace_contact: bool = False
    # The trace viewer's URL of one trace, {traceId} replaced (the Studio's run page links it),
    # e.g. http://localhost:16686/trace/{traceId}; empty: the trace id is shown, not linked.
    trace_url: str = ""
    # The worker exports the spans of finished executions (the tracing projection); false
    # leaves that to `chatflow projections run` processes.
    tracing_projection: bool = True
    # Key rotation (docs/security.md): comma-separated keys, the current one first; older
    # ones only decrypt. encryption_key, when set too, is an older key after these.
    encryption_keys: str | None = None
    # Saved test cases (docs/registry.md "Test cases"): how many a tool, a workspace and
    # one API key may hold, and how large one may be (its JSON).
    tests_max_per_tool: int = Field(default=100, ge=1)
    tests_max_per_workspace: int = Field(default=2000, ge=1)
    tests_max_per_key: int = Field(default=1000, ge=1)
    tests_max_case_bytes: int = Field(default=256 * 1024, ge=1024)
    # The one variable the V8 sandbox's worker processes inherit (docs/sandbox.md): where
    # Python imports chatflow from, when that is not site-packages.
    pythonpath: str = Field(default="", validation_alias=AliasChoices("PYTHONPATH", "pythonpath"))

    def traces_endpoint(self) -> str:
        """Where spans are sent (OTLP over HTTP, protobuf), or "" when tracing is off: the
        traces endpoint as given, else ``/v1/traces`` under the general one (the standard's
        rule)."""
        if self.otel_sdk_disabled or self.otel_traces_exporter.strip().lower() == "none":
            return ""
        if self.otel_traces_endpoint:
            return self.otel_traces_endpoint
        if self.otel_endpoint:
            return self.otel_endpoint.rstrip("/") + "/v1/traces"
        return ""
    def encryption_key_list(self) -> list[str]:
        """Every key secrets may be under, the current one (the one that encrypts) first."""
        keys = _items(self.encryption_keys or "")
        if self.encryption_key and self.encryption_key not in keys:
            keys.append(self.encryption_key)
        return keys

    def allowed_hosts(self) -> list[str]:
        return _items(self.api_allowed_hosts) or ["*"]

    def cors_origins(self) -> list[str]:
        return _items(self.api_cors_origins)

    @model_validator(mode="after")
    def _size_recovery_polls(self) -> Settings:
        if not self.claim_interval_ms:
            self.claim_interval_ms = max(10, self.claim_idle_ms // 3)
        if not self.reaper_interval_ms:
            self.reaper_interval_ms = min(1000, max(100, self.tool_timeout_ms // 30))
        return self

    @property
    def read_block_ms(self) -> int:
        """A read never waits longer than half a claim window: a live reader's consumer then
        never looks idle for one (recovery removes consumers idle that long)."""
        return max(1, min(self.block_ms, self.claim_idle_ms // 2))

    @property
    def lease_renew_every_ms(self) -> int:
        return self.lease_renew_ms or max(10, self.claim_idle_ms // 3)

    def check(self) -> None:
        """Refuse settings that contradict each other, naming both (at worker start)."""
        if self.lease_renew_every_ms * 2 > self.claim_idle_ms:
            raise ConfigurationError(
                f"CHATFLOW_LEASE_RENEW_MS ({self.lease_renew_every_ms}) must be at most half of "
                f"CHATFLOW_CLAIM_IDLE_MS ({self.claim_idle_ms}): a live worker's lease would "
                "lapse between two renewals and its in-flight entries run twice")
        if not self.reply_streams.strip(", "):
            raise ConfigurationError("CHATFLOW_REPLY_STREAMS names no stream pattern")
        self.origins()

    def origins(self) -> dict[str, OriginLimits]:
        """CHATFLOW_ORIGIN_LIMITS, keyed by origin as ``runtime.origins.origin_of`` spells it
        (``https://api.example.com:443``); ConfigurationError naming what does not fit."""
        from chatflow.runtime.origins import origin_of
        from chatflow.schemas.definition import format_validation_error
        from chatflow.schemas.edge import OriginLimits

        text = self.origin_limits.strip()
        if not text:
            return {}
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise ConfigurationError(f"CHATFLOW_ORIGIN_LIMITS is not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise ConfigurationError("CHATFLOW_ORIGIN_LIMITS must be a JSON object: "
                                     '{"https://api.example.com": {"requestsPerSecond": 10}}')
        out: dict[str, OriginLimits] = {}
        for written, spec in raw.items():
            origin = origin_of(str(written))
            if not origin.startswith(("http://", "https://")):  # ftp://x parses, as ftp://x:0
                raise ConfigurationError(f"CHATFLOW_ORIGIN_LIMITS: {written!r} is not an "
                                         "http(s) origin (https://host[:port])")
            try:
                out[origin] = OriginLimits.model_validate(spec)
            except ValidationError as exc:
                problem = format_validation_error(exc)[0]
                raise ConfigurationError(
                    f"CHATFLOW_ORIGIN_LIMITS[{written!r}].{problem}") from exc
        return out

    def reply_allowed(self) -> Callable[[str], bool]:
        return reply_matcher(self.prefix, self.reply_streams)

    def limits(self) -> Limits:
        return Limits(
            tool_timeout_ms=self.tool_timeout_ms,
            max_hops=self.max_hops,
            max_depth=self.max_depth,
            max_invocations=self.max_invocations,
            http_timeout_ms=self.http_timeout_ms,
            regex_max_text_bytes=self.regex_max_text_bytes,
            script_result_max_bytes=self.script_result_max_bytes,
            variables_max_bytes=self.variables_max_bytes,
            log_value_max_bytes=self.log_value_max_bytes,
        )

    def egress_policy(self) -> EgressPolicy:
        return EgressPolicy.parse(self.egress_allow, self.egress_deny, self.egress_profile)

    def sandbox_env(self) -> dict[str, str]:
        """The whole environment of a sandbox worker process: ``PYTHONPATH`` at most, so no
        secret of this process (encryption key, Redis password...) reaches untrusted code."""
        return {"PYTHONPATH": self.pythonpath} if self.pythonpath else {}

    def outbound(self) -> Outbound:
        """The door every executor sends HTTP through: a client with this egress policy and a
        gate of ``http_max_connections`` (one per worker process or API)."""
        from chatflow.runtime.outbound import Outbound, default_tls

        return Outbound(self.egress_policy(), max_connections=self.http_max_connections,
                        tls=default_tls(self.http_ca_file or None),
                        max_body_bytes=self.http_max_body_bytes)

    def media_config(self) -> MediaConfig:
        from chatflow.runtime.blocks.media import MediaConfig

        return MediaConfig(graph_base_url=self.graph_base_url, graph_version=self.graph_version,
                           max_bytes=self.media_max_bytes, timeout_ms=self.http_timeout_ms)

    def ai_config(self) -> AIConfig:
        from chatflow.runtime.blocks.ai import AIConfig

        return AIConfig(timeout_ms=self.llm_timeout_ms, max_input_bytes=self.media_max_bytes,
                        max_output_bytes=self.ai_max_output_bytes)


class LogSettings(BaseSettings):
    """How the service logs: apart from Settings, so that logging works even while the rest
    of the environment does not make valid settings (and can say so)."""

    model_config = SettingsConfigDict(env_prefix="CHATFLOW_", extra="ignore")

    log_level: str = "INFO"
    log_format: str = ""  # "json", "console", or "" (decided by env and terminal)
    env: str = ""  # "production" (or "prod") logs JSON lines


def configured_redis_url() -> str | None:
    """REDIS_URL (or CHATFLOW_REDIS_URL) as Settings reads it, for an error message; None
    when none is set or the environment does not make valid settings."""
    try:
        return Settings().redis_url
    except ValidationError:
        return None


# What an import file may name as a secret placeholder ({"secret": "NAME"}): only these are
# read, so a file cannot pull REDIS_URL or the encryption key into a header it sends out.
SECRET_PLACEHOLDER = re.compile(r"CHATFLOW_SECRET_[A-Z0-9_]{1,200}")


def secret_values(names: Iterable[str]) -> dict[str, str]:
    """The environment's values of the placeholder ``names`` that are set (``chatflow
    import``); a name outside :data:`SECRET_PLACEHOLDER` is never read."""
    return {name: os.environ[name] for name in names
            if SECRET_PLACEHOLDER.fullmatch(name) and name in os.environ}


def _items(value: str) -> list[str]:
    return [item for item in value.replace(",", " ").split() if item]

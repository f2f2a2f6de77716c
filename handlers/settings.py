"""Settings from the environment (``CHATFLOW_*``, plus ``REDIS_URL``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from chatflow.runtime.egress import EgressPolicy
from chatflow.runtime.limits import Limits

if TYPE_CHECKING:  # imported by the methods: the CLI reads Settings without the block executors
    from chatflow.runtime.blocks.ai import AIConfig
    from chatflow.runtime.blocks.media import MediaConfig


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CHATFLOW_", extra="ignore")

    redis_url: str | None = Field(default=None, validation_alias=AliasChoices("REDIS_URL",
                                                                               "CHATFLOW_REDIS_URL"))
    redis_cluster: bool = False
    prefix: str = ""
    partitions: int = Field(default=4, ge=1, le=1024)
    batch_size: int = Field(default=64, ge=1, le=1000)
    inflight_batches: int = Field(default=4, ge=1, le=64)
    block_ms: int = Field(default=1000, ge=1)
    # Generation-0 threshold of Python's cyclic GC in worker processes (0: Python's 700).
    # At 700 the collector ran ~70 times per 1,000 executions and took a fifth of a
    # worker's CPU; nearly everything a step allocates is freed by refcounting anyway.
    gc_threshold: int = Field(default=10_000, ge=0)
    claim_idle_ms: int = Field(default=15_000, ge=100)
    claim_interval_ms: int = Field(default=2_000, ge=10)
    reaper_interval_ms: int = Field(default=500, ge=10)
    max_deliveries: int = Field(default=5, ge=1)
    debug_maxlen: int = Field(default=1000, ge=1)
    results_maxlen: int = Field(default=0, ge=0)
    executions_maxlen: int = Field(default=0, ge=0)
    dedup_ttl_s: int = Field(default=86_400, ge=60)
    state_ttl_s: int = Field(default=3_600, ge=60)
    marker_ttl_s: int = Field(default=900, ge=60)
    script_timeout_ms: int = Field(default=1000, ge=1)
    script_max_memory_mb: int = Field(default=64, ge=4)
    tool_timeout_ms: int = Field(default=30_000, ge=100)
    max_hops: int = Field(default=50, ge=1)
    max_depth: int = Field(default=5, ge=0)
    max_invocations: int = Field(default=50, ge=0)
    http_timeout_ms: int = Field(default=10_000, ge=1)
    # Outbound HTTP connections per worker process (httpCall, callEndpoint, fetchMedia,
    # callAI share one pool). A block waiting for a free connection waits inside its own
    # timeout; slow endpoints at high rates need a bigger pool or more processes.
    http_max_connections: int = Field(default=100, ge=1)
    # Ops (docs/operations.md): projections, source-stream retention, metrics endpoint.
    projections_enabled: bool = True
    executions_retention_s: int = Field(default=14 * 86_400, ge=0)  # MINID trim; 0 keeps all
    projection_log_retention_s: int = Field(default=90 * 86_400, ge=8 * 86_400)
    metrics_port: int = Field(default=0, ge=0, le=65535)  # 0: no /metrics server
    metrics_host: str = "0.0.0.0"
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
    # HTTP API and registry (docs/registry.md)
    api_base_path: str = "/api"
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8080, ge=0, le=65535)
    internal_secret: str | None = None
    # Limits and exposure of the HTTP API (docs/security.md)
    api_max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    api_max_json_depth: int = Field(default=64, ge=4, le=1000)
    # Host headers the API answers (Starlette TrustedHostMiddleware): comma-separated names,
    # "*.example.com" for subdomains; "*" answers any (behind a proxy, set the public name).
    api_allowed_hosts: str = "*"
    # Origins allowed by CORS, comma-separated; empty (the default): no CORS headers at all.
    api_cors_origins: str = ""
    encryption_key: str | None = None  # 64 hex chars (AES-256) for secret headers and API keys

    def allowed_hosts(self) -> list[str]:
        return _items(self.api_allowed_hosts) or ["*"]

    def cors_origins(self) -> list[str]:
        return _items(self.api_cors_origins)

    def limits(self) -> Limits:
        return Limits(
            tool_timeout_ms=self.tool_timeout_ms,
            max_hops=self.max_hops,
            max_depth=self.max_depth,
            max_invocations=self.max_invocations,
            http_timeout_ms=self.http_timeout_ms,
        )

    def egress_policy(self) -> EgressPolicy:
        return EgressPolicy.parse(self.egress_allow, self.egress_deny)

    def media_config(self) -> MediaConfig:
        from chatflow.runtime.blocks.media import MediaConfig

        return MediaConfig(graph_base_url=self.graph_base_url, graph_version=self.graph_version,
                           max_bytes=self.media_max_bytes, timeout_ms=self.http_timeout_ms)

    def ai_config(self) -> AIConfig:
        from chatflow.runtime.blocks.ai import AIConfig

        return AIConfig(timeout_ms=self.llm_timeout_ms, max_input_bytes=self.media_max_bytes)


def _items(value: str) -> list[str]:
    return [item for item in value.replace(",", " ").split() if item]

"""One place that makes Redis clients, single node or cluster."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from chatflow.runtime.errors import ConfigurationError

Client = Any  # redis.asyncio.Redis | RedisCluster: both speak the commands we use


def make_client(url: str, *, cluster: bool = False, max_connections: int = 256) -> Client:
    try:
        if cluster:
            return RedisCluster.from_url(url, decode_responses=False, max_connections=max_connections)
        return aioredis.Redis.from_url(url, decode_responses=False, max_connections=max_connections)
    except ValueError as exc:
        raise ConfigurationError(
            f"REDIS_URL {url!r} is not a Redis URL ({exc}); expected redis://host:port/db"
        ) from exc

"""A local 3-master Valkey cluster (the embedded binary in cluster mode) for the whole session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.harness import Harness
from tests.support.valkey import LocalCluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    local = LocalCluster(masters=3).start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
async def harness(cluster: LocalCluster, prefix: str) -> AsyncIterator[Harness]:
    """The core suite's harness, on the cluster: RedisCluster clients, outbox + relay."""
    h = Harness(cluster.url, prefix, redis_cluster=True)
    await h.start_worker()
    try:
        yield h
    finally:
        await h.close()

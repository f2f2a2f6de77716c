"""The tree checks of requests that waited for a connection slot share their reads
(handlers/dataplane/steps.py AnsweredChecks): one pipelined read per partition for every check asked
together, each check answered for its own tree."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import RedisError

from chatflow.handlers.dataplane.steps import AnsweredChecks
from chatflow.handlers.dataplane.store import Store
from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import make_client


class CountingStore(Store):
    """The real store, counting its ``answered`` reads."""

    reads: list[tuple[int, int]]

    async def answered(self, partition: int, root_ids: list[str]) -> list[bool]:
        self.reads.append((partition, len(root_ids)))
        return await super().answered(partition, root_ids)


def counting_store(redis_url: str, prefix: str) -> CountingStore:
    store = CountingStore(make_client(redis_url), Keys(prefix, 2), state_ttl_s=60,
                          dedup_ttl_s=60, marker_ttl_s=60)
    store.reads = []
    return store


async def test_checks_asked_together_share_one_read_per_partition_and_each_gets_its_own_tree(
        redis_url: str, prefix: str) -> None:
    store = counting_store(redis_url, prefix)
    try:
        trees = [(i % 2, f"{i % 2}-root{i}") for i in range(40)]
        answered = {root for i, (_, root) in enumerate(trees) if i % 3 == 0}
        for partition, root in trees:
            if root in answered:
                await store.client.set(store.keys.done(partition, root), "1")
        checks = AnsweredChecks(store)

        unanswered = await asyncio.gather(*(checks.unanswered(p, r) for p, r in trees))

        assert unanswered == [root not in answered for _, root in trees]
        assert sorted(store.reads) == [(0, 20), (1, 20)]
    finally:
        await store.client.aclose()


async def test_checks_asked_while_a_read_is_in_flight_share_the_next_read(
        redis_url: str, prefix: str) -> None:
    store = counting_store(redis_url, prefix)
    try:
        checks = AnsweredChecks(store)
        first = asyncio.create_task(checks.unanswered(0, "0-first"))
        async with asyncio.timeout(10):
            while not store.reads:  # one loop turn at a time, until the first read is sent
                await asyncio.sleep(0)
        later = [asyncio.create_task(checks.unanswered(0, f"0-later{i}")) for i in range(10)]

        assert await first
        assert await asyncio.gather(*later) == [True] * 10
        assert store.reads == [(0, 1), (0, 10)]
    finally:
        await store.client.aclose()


async def test_a_failed_read_fails_every_check_that_shared_it_with_the_redis_error(
        prefix: str) -> None:
    # A port nothing listens on: the read fails as a RedisError, which leaves the requests'
    # step entries pending (they are reclaimed), as a check of its own did before.
    store = CountingStore(make_client("redis://127.0.0.1:1/0"), Keys(prefix, 1),
                          state_ttl_s=60, dedup_ttl_s=60, marker_ttl_s=60)
    store.reads = []
    try:
        checks = AnsweredChecks(store)
        outcomes = await asyncio.gather(*(checks.unanswered(0, f"0-r{i}") for i in range(3)),
                                        return_exceptions=True)
        assert all(isinstance(o, RedisError) for o in outcomes), outcomes
        assert store.reads == [(0, 3)]
        with pytest.raises(RedisError):  # and the next check reads again
            await checks.unanswered(0, "0-again")
    finally:
        await store.client.aclose()

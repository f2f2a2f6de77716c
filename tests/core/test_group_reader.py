"""``GroupReader`` (handlers/dataplane/batches.py): the worker's one blocking XREADGROUP per group, read
raw, and its way through a lost connection: the server closing it between two reads, and
the AttributeError redis-py leaks on some Pythons when it writes to such a connection
(redis-py issue #4287). Both are a lost connection: reconnect and read on at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from redis.exceptions import ConnectionError, TimeoutError

from chatflow.handlers.dataplane.batches import GroupReader, read_group
from chatflow.handlers.dataplane.worker import cancel_until_done
from chatflow.handlers.redis_client import Client, Entry, is_connection_lost, make_client, send_all

LEAKED = "'NoneType' object has no attribute 'writelines'"  # redis-py #4287, verbatim


class Delivered:
    """What a reader took, and its state at each change (failing, then reading again).
    ``between``: run once, after the first batch is taken and before the next read."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Entry]] = []
        self.arrived = asyncio.Event()
        self.changes: list[tuple[bool, bool]] = []
        self.reader: GroupReader | None = None
        self.between: Callable[[], Awaitable[None]] | None = None

    async def take(self, stream: str, _group: str, _process: Any, entries: list[Entry]) -> None:
        self.entries += [(stream, e) for e in entries]
        if self.between is not None:
            between, self.between = self.between, None
            await between()
        self.arrived.set()

    def changed(self) -> None:
        assert self.reader is not None
        self.changes.append((self.reader.reading, self.reader.unreachable))

    async def next_batch(self) -> None:
        await asyncio.wait_for(self.arrived.wait(), 30)
        self.arrived.clear()


def reader_on(client: Client, stream: str, delivered: Delivered) -> GroupReader:
    reader = GroupReader(client, "g", "c1", {stream: delivered.take}, delivered.take,
                         _no_heal, count=64, block_ms=5_000, on_change=delivered.changed)
    delivered.reader = reader
    return reader


async def _no_heal() -> None:
    raise AssertionError("no group is missing here")


def test_a_connection_the_server_closed_is_a_lost_connection_whatever_redis_py_raised() -> None:
    assert is_connection_lost(ConnectionError("Connection closed by server."))
    assert is_connection_lost(TimeoutError("Timeout reading from socket"))
    assert is_connection_lost(AttributeError(LEAKED))
    # Any other AttributeError is a bug, not an outage: it keeps its own path.
    assert not is_connection_lost(AttributeError("'Foo' object has no attribute 'bar'"))
    assert not is_connection_lost(AttributeError("'NoneType' object has no attribute 'items'"))
    assert not is_connection_lost(ValueError(LEAKED))


async def test_a_raw_read_gives_each_entry_its_fields_and_skips_streams_with_none(
        redis_url: str, prefix: str) -> None:
    client = make_client(redis_url)
    a, b = f"{prefix}a", f"{prefix}b"
    try:
        for stream in (a, b):
            await client.xgroup_create(stream, "g", id="0", mkstream=True)
        one = await client.xadd(a, {"data": "x"})
        two = await client.xadd(a, {"k": "1", "t": "2", "d": "3"})
        got = await read_group(client, "g", "c1", {a: ">", b: ">"}, count=10, block=100)
        assert got == [(a, [(one, {b"data": b"x"}), (two, {b"k": b"1", b"t": b"2", b"d": b"3"})])]
        # Pending entries deleted since their delivery come back without fields.
        await client.xdel(a, one)
        again = await read_group(client, "g", "c1", {a: "0"}, count=10, block=100)
        assert again == [(a, [(one, {}), (two, {b"k": b"1", b"t": b"2", b"d": b"3"})])]
    finally:
        await client.aclose()


async def test_a_reader_whose_connection_the_server_closed_between_two_reads_reads_on(
        redis_url: str, prefix: str) -> None:
    stream = f"{prefix}s"
    client = make_client(redis_url, max_connections=1)  # the reader's one connection
    other = make_client(redis_url)
    delivered = Delivered()
    killed: list[int] = []

    async def kill() -> None:
        # Between two reads (the reader waits for its take): the server drops its connection.
        (mine,) = await send_all(client, [("CLIENT", "ID")])
        assert await other.execute_command("CLIENT", "KILL", "ID", mine) == 1
        killed.append(mine)
        await other.xadd(stream, {"data": "2"})

    delivered.between = kill
    task = None
    try:
        await other.xgroup_create(stream, "g", id="0", mkstream=True)
        task = asyncio.create_task(reader_on(client, stream, delivered).run())
        await other.xadd(stream, {"data": "1"})
        await delivered.next_batch()
        if len(delivered.entries) < 2:
            await delivered.next_batch()
        assert [fields[b"data"] for _, (_, fields) in delivered.entries] == [b"1", b"2"]
        assert len(killed) == 1
        # If the next read met the closed connection, that was an unreachable server
        # (retried at once), never a reader failing for a reason of its own.
        assert all(unreachable for reading, unreachable in delivered.changes if not reading)
        assert delivered.reader is not None and delivered.reader.reading
    finally:
        if task is not None:
            await cancel_until_done([task])
        await client.aclose()
        await other.aclose()


class _LeakingWriter:
    """A connection's writer as redis-py #4287 meets it (Python 3.12 to 3.13.9): writing
    raises the AttributeError from inside asyncio's transport. Closing works."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.transport = real.transport

    def writelines(self, _data: Any) -> None:
        raise AttributeError(LEAKED)

    def close(self) -> None:
        self.real.close()

    async def wait_closed(self) -> None:
        await self.real.wait_closed()


async def _leaking(client: Client) -> None:
    """Make the pool's one connection leak #4287's AttributeError on its next write."""
    await send_all(client, [("PING",)])  # connected
    conn = await client.connection_pool.get_connection()
    try:
        conn._writer = _LeakingWriter(conn._writer)
    finally:
        await client.connection_pool.release(conn)


async def test_the_attribute_error_of_a_closed_connection_fails_a_batch_as_a_lost_connection(
        redis_url: str, prefix: str) -> None:
    """send_all raises it as a ConnectionError (a batch's entries stay pending, for
    reclaim, as in any outage), and the next call reconnects."""
    client = make_client(redis_url, max_connections=1)
    try:
        await _leaking(client)
        with pytest.raises(ConnectionError, match="writelines"):
            await send_all(client, [("SET", f"{prefix}k", "v")])
        assert await send_all(client, [("SET", f"{prefix}k", "v"), ("GET", f"{prefix}k")]) == [
            b"OK", b"v"]
    finally:
        await client.aclose()


async def test_a_reader_meeting_the_attribute_error_of_a_closed_connection_reconnects_at_once(
        redis_url: str, prefix: str) -> None:
    stream = f"{prefix}s"
    client = make_client(redis_url, max_connections=1)
    other = make_client(redis_url)
    delivered = Delivered()
    task = None
    try:
        await other.xgroup_create(stream, "g", id="0", mkstream=True)
        await other.xadd(stream, {"data": "1"})
        await _leaking(client)
        reader = reader_on(client, stream, delivered)
        task = asyncio.create_task(reader.run())
        await delivered.next_batch()
        assert [fields[b"data"] for _, (_, fields) in delivered.entries] == [b"1"]
        # One failure, as an unreachable server (retried at once), then reading again.
        assert delivered.changes == [(False, True), (True, False)]
        assert "writelines" in reader.last_error
    finally:
        if task is not None:
            await cancel_until_done([task])
        await client.aclose()
        await other.aclose()

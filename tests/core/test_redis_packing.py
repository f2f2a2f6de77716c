"""The runtime's clients pack commands with hiredis (handlers/redis_client.py): the bytes on
the wire are redis-py's own, and what a real Valkey stores reads back unchanged."""

from __future__ import annotations

import pytest
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from chatflow.handlers.redis_client import HiredisPacking, make_client

ARGS: list[tuple[object, ...]] = [
    ("SET", "k", "v"),
    ("CONFIG GET", "maxmemory"),  # a command name of two words is sent as two
    ("SET", "é", 1.5, -2, 0, b"\x00\xff"),
    ("EVALSHA", "a" * 40, 130, *[f"p:{{3}}:key:{i}" for i in range(130)], b"x" * 150_000),
    ("XADD", "s", "*", "d", memoryview(b"view"), "e", bytearray(b"array")),
]


@pytest.mark.parametrize("args", ARGS, ids=lambda a: str(a[0]))
def test_a_command_packed_by_hiredis_is_the_bytes_redis_py_would_send(
        args: tuple[object, ...]) -> None:
    plain = Connection()
    fast = type("Fast", (HiredisPacking, Connection), {})()
    assert b"".join(fast.pack_command(*args)) == b"".join(plain.pack_command(*args))
    assert (b"".join(fast.pack_commands([args, args]))
            == b"".join(plain.pack_commands([args, args])))


def test_an_argument_no_command_can_carry_is_refused_with_a_clear_error() -> None:
    fast = type("Fast", (HiredisPacking, Connection), {})()
    with pytest.raises(DataError, match="cannot be sent"):
        fast.pack_command("SET", "k", None)


async def test_values_written_through_the_runtime_client_read_back_unchanged(
        redis_url: str, prefix: str) -> None:
    client = make_client(redis_url)
    try:
        assert isinstance(client.connection_pool.connection_class(), HiredisPacking)
        big = bytes(range(256)) * 400
        async with client.pipeline(transaction=False) as pipe:
            pipe.set(f"{prefix}a", "é")
            pipe.set(f"{prefix}b", big)
            pipe.set(f"{prefix}c", 1.5)
            await pipe.execute()
        assert await client.mget(f"{prefix}a", f"{prefix}b", f"{prefix}c") == [
            "é".encode(), big, b"1.5"]
    finally:
        await client.aclose()

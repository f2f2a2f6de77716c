"""One place that makes Redis clients, single node or cluster, and says clearly when the
server refuses them. ``REDIS_URL`` may carry credentials (``redis://default:PASSWORD@host:port/0``,
``redis://USER:PASSWORD@...`` for an ACL user, ``rediss://`` for TLS); they never appear in
a message: :func:`redact` hides them."""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, cast

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import AuthenticationError, DataError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from chatflow.runtime.errors import ConfigurationError
from chatflow.runtime.masking import mask_url
from chatflow_agent.runtime_client import Entry, Key, ProducerClient, StreamReply, Value

__all__ = ["Client", "Entry", "Key", "Pipeline", "Script", "StreamReply", "Value"]


class Script(Protocol):
    """A Lua script registered with ``register_script``: EVALSHA, loading it on NOSCRIPT."""

    sha: str

    def __call__(self, keys: Sequence[Key] | None = None,
                 args: Sequence[Value] | None = None) -> Awaitable[Any]: ...


class Pipeline(Protocol):
    """A non-transactional pipeline: commands are queued, ``execute`` sends them and answers
    each command's reply, in order."""

    async def __aenter__(self) -> Pipeline: ...

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    def execute_command(self, *args: Value) -> Pipeline: ...

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Value) -> Pipeline: ...

    def get(self, name: Key) -> Pipeline: ...

    def set(self, name: Key, value: Value, ex: int | None = None) -> Pipeline: ...

    def delete(self, *names: Key) -> Pipeline: ...

    def hgetall(self, name: Key) -> Pipeline: ...

    def hset(self, name: Key, key: Key | None = None, value: Value | None = None,
             mapping: Mapping[str, Value] | None = None) -> Pipeline: ...

    def hdel(self, name: Key, *keys: Key) -> Pipeline: ...

    def hincrby(self, name: Key, key: Key, amount: int = 1) -> Pipeline: ...

    def expire(self, name: Key, time: int) -> Pipeline: ...

    def pexpire(self, name: Key, time: int) -> Pipeline: ...

    def sadd(self, name: Key, *values: Value) -> Pipeline: ...

    def srem(self, name: Key, *values: Value) -> Pipeline: ...

    def zadd(self, name: Key, mapping: Mapping[str, Value], xx: bool = False) -> Pipeline: ...

    def zrem(self, name: Key, *values: Value) -> Pipeline: ...

    def zcard(self, name: Key) -> Pipeline: ...

    def zrange(self, name: Key, start: int, end: int, withscores: bool = False) -> Pipeline: ...

    def xlen(self, name: Key) -> Pipeline: ...

    def xadd(self, name: Key, fields: Mapping[str, Value], id: Key = "*",
             maxlen: int | None = None, approximate: bool = True) -> Pipeline: ...

    def xtrim(self, name: Key, maxlen: int | None = None, approximate: bool = True,
              minid: Key | None = None) -> Pipeline: ...

    def xrange(self, name: Key, min: Key = "-", max: Key = "+",
               count: int | None = None) -> Pipeline: ...

    def xack(self, name: Key, groupname: Key, *ids: Key) -> Pipeline: ...

    def xdel(self, name: Key, *ids: Key) -> Pipeline: ...

    def xinfo_groups(self, name: Key) -> Pipeline: ...

    async def execute(self, raise_on_error: bool = True) -> list[Any]: ...


class Client(ProducerClient, Protocol):
    """The commands the handlers send (beyond the producer's), typed as a client made with
    ``decode_responses=False`` answers them: redis.asyncio's ``Redis`` and ``RedisCluster``
    both; tests/test_redis_types.py checks that they have each. Made by
    :func:`make_client`, the one place that builds one."""

    async def ping(self) -> bool: ...

    async def time(self) -> tuple[int, int]: ...

    async def info(self, section: str | None = None) -> dict[str, Any]: ...

    async def set(self, name: Key, value: Value, ex: int | None = None,
                  nx: bool = False) -> bool | None: ...

    async def delete(self, *names: Key) -> int: ...

    async def exists(self, *names: Key) -> int: ...

    async def hgetall(self, name: Key) -> dict[bytes, bytes]: ...

    async def hset(self, name: Key, key: Key | None = None, value: Value | None = None,
                   mapping: Mapping[str, Value] | None = None) -> int: ...

    async def sadd(self, name: Key, *values: Value) -> int: ...

    async def srem(self, name: Key, *values: Value) -> int: ...

    async def smembers(self, name: Key) -> builtins.set[bytes]: ...

    async def sismember(self, name: Key, value: Value) -> bool | int: ...

    async def scard(self, name: Key) -> int: ...

    async def zrem(self, name: Key, *values: Value) -> int: ...

    async def zrange(self, name: Key, start: int, end: int,
                     withscores: bool = False) -> list[Any]: ...

    async def zrangebyscore(self, name: Key, min: Value, max: Value, start: int | None = None,
                            num: int | None = None) -> list[bytes]: ...

    async def xlen(self, name: Key) -> int: ...

    async def xack(self, name: Key, groupname: Key, *ids: Key) -> int: ...

    async def xdel(self, name: Key, *ids: Key) -> int: ...

    async def xtrim(self, name: Key, maxlen: int | None = None, approximate: bool = True,
                    minid: Key | None = None) -> int: ...

    async def xgroup_create(self, name: Key, groupname: Key, id: Key = "$",
                            mkstream: bool = False) -> bool: ...

    async def xinfo_groups(self, name: Key) -> list[dict[str, Any]]: ...

    async def xinfo_stream(self, name: Key) -> dict[str, Any]: ...

    async def xpending(self, name: Key, groupname: Key) -> dict[str, Any]: ...

    async def xpending_range(self, name: Key, groupname: Key, min: Key, max: Key, count: int,
                             consumername: Key | None = None,
                             idle: int | None = None) -> list[dict[str, Any]]: ...

    async def xclaim(self, name: Key, groupname: Key, consumername: Key, min_idle_time: int,
                     message_ids: Sequence[Key], idle: int | None = None,
                     justid: bool = False) -> list[Any]: ...

    async def eval(self, script: str, numkeys: int, *keys_and_args: Value) -> Any: ...

    async def script_load(self, script: str) -> str: ...

    def register_script(self, script: str) -> Script: ...

    def pipeline(self, transaction: bool = True) -> Pipeline: ...


# ``url`` with its password replaced by ``***`` (user name kept), for messages: the one
# masking policy's (chatflow.runtime.masking).
redact = mask_url


class HiredisPacking:
    """Packs commands with hiredis's C packer, as redis-py's sync client already does when
    hiredis is installed; its asyncio connections still pack in Python, re-joining a growing
    buffer once per argument. A commit of 64 executions has a hundred-odd arguments: that
    was several per cent of a worker's CPU. Mixed into the pool's connection class."""

    def pack_command(self, *args: Any) -> list[bytes]:
        if isinstance(args[0], str):  # 'CONFIG GET' and the like: words sent separately
            args = tuple(args[0].encode().split()) + args[1:]
        elif b" " in args[0]:
            args = tuple(args[0].split()) + args[1:]
        try:
            # Tried as given first: a commit has hundreds of arguments, and looking at each
            # in Python cost three times the packing.
            return [hiredis.pack_command(args)]
        except TypeError:  # a bytearray (hiredis takes bytes), or what nothing can send
            args = tuple(bytes(a) if isinstance(a, bytearray | memoryview) else a for a in args)
        try:
            return [hiredis.pack_command(args)]
        except TypeError as exc:  # e.g. None or a dict: what redis-py's encoder refuses too
            raise DataError(f"a Redis command argument cannot be sent: {exc}") from exc


def _hiredis_packing(client: Any) -> Any:
    pool = client.connection_pool
    base = pool.connection_class
    if not issubclass(base, HiredisPacking):
        pool.connection_class = type(f"Hiredis{base.__name__}", (HiredisPacking, base), {})
    return client


Command = tuple[Any, ...]


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection is gone: redis-py's ConnectionError or
    TimeoutError, or the AttributeError that redis-py (issue #4287) can leak on some Pythons
    when it writes to a connection the server closed (``'NoneType' object has no attribute
    'writelines'``). All of them mean the same thing: reconnect and retry."""
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return True
    # Only a write's: any other AttributeError on None is a bug, and must say so.
    return isinstance(exc, AttributeError) and str(exc) in _LEAKED_BY_A_CLOSED_TRANSPORT


_LEAKED_BY_A_CLOSED_TRANSPORT = frozenset(
    f"'NoneType' object has no attribute '{name}'" for name in ("writelines", "write"))


async def ensure_group(client: Client, stream: str, group: str) -> None:
    """Create ``group`` on ``stream`` at id 0, making the stream if need be (FastStream would
    start at ``$``, skipping whatever was published before the first reader). One that
    exists already (BUSYGROUP) is left as it is; any other refusal (WRONGTYPE: the key is no
    stream) is raised."""
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
    except ResponseError as exc:
        if not str(exc).startswith("BUSYGROUP"):
            raise


async def send_all(client: Client, commands: list[Command], *,
                   raise_errors: bool = True) -> list[Any]:
    """Send ``commands`` in one write and read their replies, raw (no response callbacks):
    what a non-transactional pipeline does, without its per-call machinery (a pipeline
    object, its command stack, its observability hooks, its reset), which cost a worker
    about a fifth of each round trip's CPU. Kept from redis-py: the pool, hiredis packing
    and parsing, and the connection's retry policy, as a pipeline applies it (a connection
    error or timeout disconnects; the pools made here retry nothing, so the batch fails and
    its entries stay pending for reclaim). Every reply is read before the first error is
    raised, so the connection never desyncs.
    A cluster client goes through its own pipeline (it routes each command by its keys).
    ``raise_errors=False``: an error reply is returned in its place instead of raised."""
    if isinstance(client, RedisCluster):
        async with client.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            return list(await pipe.execute(raise_on_error=raise_errors))
    pool: Any = cast(aioredis.Redis, client).connection_pool  # redis-py leaves it untyped
    conn = await pool.get_connection()

    async def attempt() -> list[Any]:
        packed = conn.pack_commands(commands)
        try:
            await conn.send_packed_command(packed)
        except AttributeError as exc:
            if not is_connection_lost(exc):
                raise
            # redis-py #4287: a closed connection, as a ConnectionError (dropped, retried).
            raise RedisConnectionError(f"connection closed by the server: {exc}") from exc
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(await conn.read_response())
            except ResponseError as exc:
                replies.append(exc)
        return replies

    async def failed(error: Exception) -> None:
        await conn.disconnect(error=error)

    try:
        replies: list[Any] = await conn.retry.call_with_retry(attempt, failed)
    finally:
        await pool.release(conn)
    if raise_errors:
        for reply in replies:
            if isinstance(reply, ResponseError):
                raise reply
    return replies


def make_client(url: str, *, cluster: bool = False, max_connections: int = 256,
                read_timeout_s: float | None = None) -> Client:
    """``read_timeout_s``: the socket timeout, for a client whose commands block on the server
    longer than redis-py's default of 5 s (XREADGROUP BLOCK); None keeps that default."""
    extra: dict[str, Any] = {} if read_timeout_s is None else {"socket_timeout": read_timeout_s}
    try:
        if cluster:
            made: Any = RedisCluster.from_url(url, decode_responses=False,
                                              max_connections=max_connections, **extra)
        else:
            made = _hiredis_packing(aioredis.Redis.from_url(
                url, decode_responses=False, max_connections=max_connections, **extra))
    except ValueError as exc:
        raise ConfigurationError(
            f"REDIS_URL {redact(url)!r} is not a Redis URL; expected "
            "redis://[[USER]:PASSWORD@]host:port/db") from exc
    return cast(Client, made)  # redis-py's own types answer bytes | str: ours say bytes


def is_auth_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is the server refusing a client without (valid) credentials."""
    if isinstance(exc, AuthenticationError):
        return True
    text = str(exc)
    return isinstance(exc, ResponseError) and text.startswith(("NOAUTH", "WRONGPASS", "NOPERM"))


def auth_failure(url: str | None) -> ConfigurationError:
    """The error to show when the server refused our credentials (never echoes them)."""
    where = redact(url) if url else "REDIS_URL"
    return ConfigurationError(
        f"the Valkey/Redis server at {where} refused the connection: it requires a password "
        "(or this one is wrong). Put it in REDIS_URL: redis://default:PASSWORD@host:port/0, or "
        "redis://USER:PASSWORD@host:port/0 for an ACL user. `chatflow up` keeps the password "
        "of its embedded server in DATA_DIR/valkey.password.")


async def check_credentials(url: str, *, cluster: bool = False) -> None:
    """Ping the server once; a refusal of our credentials becomes :func:`auth_failure`.
    For commands that would otherwise fail deep inside a framework's start-up."""
    client = make_client(url, cluster=cluster, max_connections=2)
    try:
        await client.ping()
    except (AuthenticationError, ResponseError) as exc:
        if is_auth_refusal(exc):
            raise auth_failure(url) from None  # the driver's message may quote the URL
        raise
    finally:
        await client.aclose()

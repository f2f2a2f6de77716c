"""Where conversations live between runs: in memory by default, or in Redis."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from .messages import MESSAGE, Message


class SessionStore:
    """Conversation history per session id, kept in this process's memory.

    Histories are append-only. ``SessionStore.redis(url)`` gives the same
    interface backed by Redis, for histories that outlive the process.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, list[Message]] = {}
        # Runner.run may drive this store from several threads' event loops.
        self._lock = threading.Lock()

    @staticmethod
    def redis(
        url: str, *, prefix: str = "chatflow-agent:session:", ttl_seconds: int | None = None
    ) -> RedisSessionStore:
        """A Redis-backed store; ``ttl_seconds`` expires idle sessions."""
        return RedisSessionStore(url, prefix=prefix, ttl_seconds=ttl_seconds)

    async def load(self, session_id: str) -> list[Message]:
        with self._lock:
            return list(self._sessions.get(session_id, ()))

    async def append(self, session_id: str, messages: Sequence[Message]) -> None:
        with self._lock:
            self._sessions.setdefault(session_id, []).extend(messages)

    async def clear(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)


class RedisSessionStore(SessionStore):
    """Conversation history in Redis lists, one JSON message per element.

    Without a ``client`` each operation opens its own connection: a client is
    bound to the event loop it was made on, and ``Runner.run`` starts a new loop
    per call. Long-lived async apps can pass their own ``redis.asyncio`` client.
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        prefix: str = "chatflow-agent:session:",
        ttl_seconds: int | None = None,
        client: Any = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self._client = client

    def __repr__(self) -> str:
        return f"RedisSessionStore(prefix={self.prefix!r})"

    def _key(self, session_id: str) -> str:
        return f"{self.prefix}{session_id}"

    async def _run(self, operation: str, *args: Any) -> Any:
        if self._client is not None:
            return await getattr(self._client, operation)(*args)
        from redis.asyncio import from_url

        async with from_url(self.url) as client:
            return await getattr(client, operation)(*args)

    async def load(self, session_id: str) -> list[Message]:
        raw: list[bytes] = await self._run("lrange", self._key(session_id), 0, -1)
        return [MESSAGE.validate_json(item) for item in raw]

    async def append(self, session_id: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        key = self._key(session_id)
        await self._run("rpush", key, *(MESSAGE.dump_json(m) for m in messages))
        if self.ttl_seconds:
            await self._run("expire", key, self.ttl_seconds)

    async def clear(self, session_id: str) -> None:
        await self._run("delete", self._key(session_id))

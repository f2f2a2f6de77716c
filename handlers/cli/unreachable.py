"""One line instead of a traceback when the command cannot reach its Valkey/Redis."""

from __future__ import annotations

from collections.abc import Iterator

from chatflow.runtime.masking import mask_url

ADVICE = "start one with `chatflow up`, or set REDIS_URL (or --redis-url) to a running server"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups, once each."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def unreachable_message(exc: BaseException, url: str | None) -> str | None:
    """The line to print when ``exc`` means the server could not be reached, else ``None``;
    ``url`` is the one the command used (``--redis-url``, else Settings' REDIS_URL)."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    for cause in _chain(exc):
        if isinstance(cause, RedisConnectionError | RedisTimeoutError | ConnectionRefusedError):
            where = url or "?"
            why = " ".join(str(cause).split()) or type(cause).__name__
            return f"cannot reach Valkey/Redis at {mask_url(where)} ({why}): {ADVICE}"
    return None

"""FastStream wiring for raw batch subscribers: the entries reach our code untouched.

Two FastStream defaults cost more than the work they wrap on our hot path, so
the brokers made here turn them off:

- ``apply_types=False``: FastDepends would resolve the handler's parameters on
  every batch, and injecting ``Context("message")`` enters and exits a sync
  context manager through anyio's thread pool, two thread hops per batch
  (measured: about 0.8 ms from XREADGROUP's reply to our handler, idle). Our
  handler takes one argument, the decoded batch, and needs no injection.
- The batch parser JSON-decodes every entry and re-encodes the batch; an entry
  that is not valid UTF-8 JSON (a producer's mistake) would fail the whole batch
  there, before our own code could dead-letter it. ``raw_entries`` hands
  FastStream placeholders, and ``entries_of`` gives the handler the raw
  ``(entry id, fields)`` pairs, which our processors decode themselves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from faststream.redis import RedisBroker

from .redis_client import Entry

_NULL = {b"__data__": b"null"}
_QUIET: Any = None  # FastStream's per-message INFO lines would drown ours


def raw_broker(url: str, *, cluster: bool = False) -> Any:
    """A broker whose handlers get the decoded batch as their only argument."""
    if cluster:
        from faststream.redis import RedisClusterBroker

        return RedisClusterBroker(url, logger=_QUIET, apply_types=False)
    return RedisBroker(url, logger=_QUIET, apply_types=False)


async def raw_entries(message: Any, original: Callable[[Any], Awaitable[Any]]) -> Any:
    """Parser: FastStream parses placeholders; the raw entries ride along in the raw message."""
    light = dict(message)
    light["entries"] = message["data"]
    light["data"] = [_NULL]
    return await original(light)


async def entries_of(message: Any) -> list[Entry]:
    """Decoder: the batch as ``(entry id, fields)`` pairs, as XREADGROUP returned them."""
    raw = message.raw_message
    return list(zip(raw["message_ids"], raw["entries"], strict=True))

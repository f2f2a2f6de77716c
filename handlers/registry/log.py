"""The registry's event log: one Redis stream, appended with a check-and-append script.

Each append names the versions it expects (``field -> value``, ``"0"`` for absent)
and the versions it sets; the Lua script checks them and XADDs the event in one
step, so several API processes can append safely (optimistic concurrency). The
versions hash carries the stream's name as its hash tag: both keys live in one
slot, on a single node or a Redis Cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chatflow.runtime.errors import ChatflowError

from ..keys import Keys
from ..redis_client import Client

_APPEND = """
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local have = redis.call('HGET', KEYS[2], ARGV[3 + 2 * i])
  if not have then have = '0' end
  if have ~= ARGV[4 + 2 * i] then return {0, ARGV[3 + 2 * i], have} end
end
local base = 3 + 2 * n
for j = 0, tonumber(ARGV[base]) - 1 do
  local f, v = ARGV[base + 1 + 2 * j], ARGV[base + 2 + 2 * j]
  if v == '' then redis.call('HDEL', KEYS[2], f) else redis.call('HSET', KEYS[2], f, v) end
end
return {1, redis.call('XADD', KEYS[1], '*', 'data', ARGV[1])}
"""


@dataclass
class Append:
    """An event with the versions it expects and the versions it leaves."""

    event: dict[str, Any]
    expect: dict[str, str] = field(default_factory=dict)
    sets: dict[str, str] = field(default_factory=dict)  # "" deletes the field


class StaleVersion(ChatflowError):
    """Raised when an expected version no longer holds."""

    def __init__(self, name: str, have: str) -> None:
        super().__init__(f"{name} is at {have}")
        self.name = name
        self.have = have


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RegistryLog:
    def __init__(self, client: Client, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._append = client.register_script(_APPEND)

    async def append(self, item: Append) -> str:
        args: list[Any] = [json.dumps(item.event, ensure_ascii=False), len(item.expect)]
        for name, value in item.expect.items():
            args += [name, value]
        args.append(len(item.sets))
        for name, value in item.sets.items():
            args += [name, value]
        reply = await self._append(keys=[self.keys.registry, self.keys.registry_versions],
                                   args=args)
        if int(reply[0]) != 1:
            raise StaleVersion(_text(reply[1]), _text(reply[2]))
        return _text(reply[1])

    async def read(self, after: str, count: int = 1000) -> list[tuple[str, dict[str, Any]]]:
        start = f"({after}" if after != "0-0" else "-"
        entries = await self.client.xrange(self.keys.registry, min=start, count=count)
        return [(_text(entry_id), json.loads(fields[b"data"])) for entry_id, fields in entries]

    async def last_id(self) -> str:
        entries = await self.client.xrevrange(self.keys.registry, count=1)
        return _text(entries[0][0]) if entries else "0-0"

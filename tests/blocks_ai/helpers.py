"""Tool definitions, commands and stream reads shared by the callAI/fetchMedia tests."""

from __future__ import annotations

import json
import time
from typing import Any

import msgspec

from chatflow.schemas.wire import ExecuteToolCommand, ToolResult
from tests.blocks_ai.conftest import WA_TOKEN
from tests.harness import Harness


def goto(block_id: str) -> dict[str, str]:
    return {"type": "block", "blockId": block_id}


def fetch_media(block_id: str, then: str, **fields: Any) -> dict[str, Any]:
    return {"type": "fetchMedia", "id": block_id, "mode": "whatsapp",
            "mediaIdVariable": "mediaId", "urlVariable": "mediaUrl",
            "base64Variable": "media", "mimeTypeVariable": "mime",
            "defaultOutput": goto(then), **fields}


def call_ai(block_id: str, then: str, capability: str, **fields: Any) -> dict[str, Any]:
    block = {"type": "callAI", "id": block_id, "llmCredentialId": "cred-1",
             "outputVariable": "answer", "capability": capability,
             "defaultOutput": goto(then), **fields}
    if capability != "generateText":
        block = {"inputVariable": "media", "mimeTypeVariable": "mime", **block}
    return block


def returns(value: str = "{{answer}}") -> dict[str, Any]:
    return {"type": "return", "id": "done", "value": value}


def tool(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"blocks": {b["id"]: b for b in blocks}, "onboardingBlockId": blocks[0]["id"]}


def command(h: Harness, pt: str, *, router_token: str | None = WA_TOKEN,
            **kw: Any) -> ExecuteToolCommand:
    """``harness.command`` with the WhatsApp token in the router context."""
    cmd = h.command(pt, **kw)
    router = {"id": "r-1", **({"accessToken": router_token} if router_token else {})}
    return msgspec.structs.replace(cmd, context=msgspec.structs.replace(cmd.context,
                                                                        router=router))


async def run(h: Harness, pt: str, definition: dict[str, Any], **kw: Any) -> ToolResult:
    await h.put_tool(pt, definition)
    return await h.run_command(command(h, pt, **kw))


async def entries(h: Harness, stream: str, count: int, timeout_s: float = 10.0
                  ) -> list[dict[str, Any]]:
    """The first ``count`` entries of ``stream``, waiting for them with blocking reads."""
    found: list[dict[str, Any]] = []
    cursor: bytes | str = "0-0"
    deadline = time.monotonic() + timeout_s
    while len(found) < count:
        left_ms = int((deadline - time.monotonic()) * 1000)
        assert left_ms > 0, f"{stream}: {len(found)} of {count} entries arrived: {found}"
        reply = await h.client.xread({stream: cursor}, count=100, block=min(left_ms, 1000))
        for _name, items in reply or []:
            for entry_id, fields in items:
                cursor = entry_id
                found.append(json.loads(fields[b"data"]))
    return found


async def everything_stored(h: Harness, skip: set[str]) -> bytes:
    """Every key and value under the harness prefix (streams, hashes, strings...), as bytes."""
    out: list[bytes] = []
    async for raw_key in h.client.scan_iter(match=f"*{h.keys.prefix}*", count=1000):
        key = raw_key.decode()
        if key in skip:
            continue
        kind = (await h.client.type(key)).decode()
        out.append(raw_key)
        if kind == "string":
            out.append(await h.client.get(key) or b"")
        elif kind == "hash":
            out.extend(b"%s=%s" % kv for kv in (await h.client.hgetall(key)).items())
        elif kind == "stream":
            for _id, fields in await h.client.xrange(key):
                out.extend(v for kv in fields.items() for v in kv)
        elif kind == "zset":
            out.extend(await h.client.zrange(key, 0, -1))
        elif kind == "list":
            out.extend(await h.client.lrange(key, 0, -1))
        elif kind == "set":
            out.extend(await h.client.smembers(key))
    return b"\n".join(out)

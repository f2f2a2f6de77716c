"""The physical limit: a bare, batched redis-py XREADGROUP/XADD/XACK loop.

Each "execution" is a message that hops ``hops`` times through one stream
(read a batch, XADD each message's next hop, XACK the batch, all pipelined),
then lands on a result stream. No state, no Lua, no FastStream: what Redis
and one Python process can do at best with the same batch size.
"""

from __future__ import annotations

import asyncio
import sys

import redis.asyncio as aioredis


async def loop(url: str, prefix: str, consumer: str, batch: int) -> None:
    client = aioredis.Redis.from_url(url)
    steps, results = f"{prefix}steps", f"{prefix}results"
    while True:
        reply = await client.xreadgroup("g", consumer, {steps: ">"}, count=batch, block=1000)
        if not reply:
            continue
        entries = reply[0][1]
        async with client.pipeline(transaction=False) as pipe:
            for _entry_id, fields in entries:
                left = int(fields[b"left"]) - 1
                if left > 0:
                    pipe.xadd(steps, {b"c": fields[b"c"], b"left": str(left)})
                else:
                    pipe.xadd(results, {b"data": fields[b"c"]})
            pipe.xack(steps, "g", *[e[0] for e in entries])
            pipe.xdel(steps, *[e[0] for e in entries])
            await pipe.execute()


if __name__ == "__main__":
    asyncio.run(loop(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))

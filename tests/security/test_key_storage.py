"""Redis never holds an API token in clear: a scan of every key, field, member and stream
entry after keys were created, used and revoked."""

from __future__ import annotations

from typing import Any

from tests.api.support import Api


async def every_value(client: Any) -> list[bytes]:
    """Every key name and every value byte string Redis holds (all types)."""
    out: list[bytes] = []
    async for key in client.scan_iter(count=500):
        out.append(key)
        kind = (await client.type(key)).decode()
        if kind == "string":
            out.append(await client.get(key))
        elif kind == "hash":
            for field, value in (await client.hgetall(key)).items():
                out += [field, value]
        elif kind == "set":
            out += list(await client.smembers(key))
        elif kind == "zset":
            out += [member for member, _ in await client.zrange(key, 0, -1, withscores=True)]
        elif kind == "list":
            out += list(await client.lrange(key, 0, -1))
        elif kind == "stream":
            for _id, fields in await client.xrange(key):
                for field, value in fields.items():
                    out += [field, value]
    return out


async def test_no_token_is_stored_in_clear_anywhere_in_redis(api: Api) -> None:
    from chatflow.handlers.controlplane.apikeys import revoke_api_key

    tokens = [api.token]
    for workspace, role in (("default", "editor"), ("shop", "viewer"), ("shop", "admin")):
        tokens.append(await api.new_key(workspace, role))
    for token in tokens:
        async with api.as_key(token) as client:
            assert (await client.get("/me")).status_code == 200
    async with api.as_key(tokens[-1]) as admin:
        assert (await admin.post("/tools", json={"id": "t-shop"})).status_code == 201
    await revoke_api_key(api.client, api.keys, tokens[1].split("_")[1])
    stored = await every_value(api.client)
    assert len(stored) > 20
    for token in tokens:
        secret = token.split("_", 2)[2]
        for value in stored:
            assert secret.encode() not in value, value[:80]
            assert token.encode() not in value

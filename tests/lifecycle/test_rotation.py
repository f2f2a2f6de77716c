"""Key rotation: secrets carry their key's id, ``chatflow keys rotate-encryption`` re-encrypts
every stored secret under the first of CHATFLOW_ENCRYPTION_KEYS, and once the old key is
removed a callEndpoint with secret headers still sends them (a real worker, a loopback
upstream). A secret in the format before key ids (``iv:cipher``) is read and rotated too."""

from __future__ import annotations

import json

from chatflow.handlers.redis_client import make_client
from chatflow.handlers.registry import Registry
from chatflow.handlers.registry.crypto import SecretBox, new_key
from chatflow.handlers.registry.log import Append
from tests.api.support import ENCRYPTION_KEY as OLD
from tests.api.support import Api, api_settings, running_api
from tests.harness import Harness
from tests.lifecycle.conftest import Shell
from tests.registry.defs import call_endpoint, definition, ret
from tests.support.http import LoopbackServer

SECRET = "Bearer rotate-me-41d2"
EP_SECRET = "ep-rotate-me-9a0c"
LEGACY = "Bearer legacy-7f3e"


async def legacy_server(api: Api, base: str) -> None:
    """A server whose secret was saved before secrets carried a key id: ``iv:cipher``."""
    token = SecretBox(OLD).encrypt(LEGACY).split(":", 1)[1]
    client = make_client(api.settings.redis_url or "")
    try:
        registry = Registry(client, api.keys, SecretBox(OLD))
        await registry.commit(lambda _state: Append(
            {"type": "server.created", "server": {
                "id": "srv-old", "name": "Old", "baseUrl": base, "headers": [
                    {"name": "Authorization", "value": token, "secret": True}]}},
            {"server:srv-old": "0"}, {"server:srv-old": "1"}))
    finally:
        await client.aclose()


async def stored_key_ids(api: Api) -> set[str | None]:
    client = make_client(api.settings.redis_url or "")
    try:
        registry = Registry(client, api.keys, SecretBox(OLD))
        await registry.catch_up()
        state = registry.state
    finally:
        await client.aclose()
    tokens = [h["value"] for s in state.servers.values() for h in s.get("headers") or []
              if h.get("secret")]
    tokens += [h["value"] for s in state.servers.values() for e in s["endpoints"].values()
               for h in e.get("headers") or [] if h.get("secret")]
    tokens += [c["apiKey"] for c in state.credentials.values() if c.get("apiKey")]
    return {SecretBox.key_of(t) for t in tokens}


async def test_after_a_rotation_the_old_key_goes_and_secret_headers_still_reach_upstream(
        api: Api, shell: Shell, http_server: LoopbackServer) -> None:
    http_server.route("GET", "/who", {"ok": True})
    await api.ok("POST", "/integration-servers", 201, json={
        "id": "srv-r", "name": "R", "baseUrl": http_server.base,
        "headers": [{"name": "Authorization", "value": SECRET, "secret": True}]})
    await api.ok("POST", "/integration-servers/srv-r/endpoints", 201, json={
        "id": "who", "name": "who", "path": "/who",
        "headers": [{"name": "X-Api-Key", "value": EP_SECRET, "secret": True}]})
    await api.ok("POST", "/llm-credentials", 201, json={"id": "cred-r", "name": "L",
                                                        "apiKey": "sk-rotate-me"})
    await legacy_server(api, http_server.base)
    await api.ok("POST", "/integration-servers/srv-old/endpoints", 201, json={
        "id": "who", "name": "who", "path": "/who"})
    for tool_id, server in (("t-r", "srv-r"), ("t-old", "srv-old")):
        await api.ok("POST", "/tools", 201, json={"id": tool_id, "definition": definition(
            call_endpoint("e", server, "who", []), ret("{{status}}"))})
    pts = [(await api.ok("POST", f"/tools/{t}/publish"))["publishedToolId"]
           for t in ("t-r", "t-old")]
    old_id = SecretBox(OLD).current_id
    assert await stored_key_ids(api) == {old_id, None}  # None: the legacy iv:cipher secret

    new = new_key()
    only_new = {"CHATFLOW_ENCRYPTION_KEY": new}
    # Without the old key, what it wrote cannot be read. A secret that names its key keeps
    # the value cached by a process that held it (with a warning naming that key); one from
    # before key ids cannot say whose it is, and is left empty.
    early = await shell("registry", "rebuild", env=only_new)
    assert early.code == 0
    assert f"key_id={old_id}" in early.out + early.err
    cached = json.loads(await api.client.get(api.keys.server("srv-r")) or b"{}")
    assert cached["headers"]["Authorization"] == SECRET
    cached = json.loads(await api.client.get(api.keys.server("srv-old")) or b"{}")
    assert cached["headers"]["Authorization"] == ""

    rotated = await shell("keys", "rotate-encryption",
                          env={"CHATFLOW_ENCRYPTION_KEYS": f"{new},{OLD}"})
    assert rotated.code == 0, rotated.err
    report = json.loads(rotated.out)
    assert report["secrets"] == 4 and report["failed"] == []
    assert report["objects"] == ["server srv-old", "server srv-r", "credential cred-r"]
    assert await stored_key_ids(api) == {SecretBox(new).current_id}
    again = await shell("keys", "rotate-encryption", env={"CHATFLOW_ENCRYPTION_KEYS": new})
    assert json.loads(again.out)["secrets"] == 0  # nothing left under another key
    trail = await api.ok("GET", "/audit", params={"objectId": "srv-r"})
    assert trail[-1]["type"] == "server.updated" and trail[-1]["actor"] == "shell"

    # The old key is gone from every process: the caches are rebuilt with the new one only.
    assert (await shell("registry", "rebuild", env=only_new)).code == 0
    harness = Harness(api.settings.redis_url or "", api.settings.prefix)
    await harness.start_worker()
    try:
        for pt in pts:
            result = await harness.run(pt)
            assert result.ok and result.result == "200", result
    finally:
        await harness.close()
    sent = [r for r in http_server.requests if r.path == "/who"]
    assert [r.headers.get("authorization") for r in sent] == [SECRET, LEGACY]
    assert sent[0].headers["x-api-key"] == EP_SECRET
    for text in (early.out, early.err, rotated.out, rotated.err, again.out):
        assert "rotate-me" not in text and "legacy-7f3e" not in text


async def test_a_process_not_yet_restarted_keeps_a_secret_written_under_the_new_key(
        redis_url: str, prefix: str) -> None:
    """Step 1 of the runbook: API processes restart one by one with KEYS=<new>,<old>. One
    still on the old key alone cannot read what a restarted one wrote; it must leave that
    secret's cached value and the workspace's masking set as they are, not blank them."""
    new = new_key()
    restarted = api_settings(redis_url, prefix, encryption_key=None,
                             encryption_keys=f"{new},{OLD}")
    async with running_api(restarted) as first, running_api(
            api_settings(redis_url, prefix)) as second:
        await first.ok("POST", "/integration-servers", 201, json={
            "id": "srv-mid", "name": "Mid", "baseUrl": "http://127.0.0.1:9",
            "headers": [{"name": "Authorization", "value": SECRET, "secret": True}]})
        cache = first.keys.server("srv-mid")
        masking = first.keys.workspace_secrets("default")
        assert (await first.get_key(cache))["headers"] == {"Authorization": SECRET}
        assert await first.client.smembers(masking) == {SECRET.encode()}

        await second.ok("GET", "/integration-servers/srv-mid")  # catches up, projects

        assert (await second.get_key(cache))["headers"] == {"Authorization": SECRET}
        assert await second.client.smembers(masking) == {SECRET.encode()}

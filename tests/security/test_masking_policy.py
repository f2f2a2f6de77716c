"""One masking policy for the history, debug events and test runs (issue 29): secret-named
keys at any depth and inside a returned JSON ``result``, secret-named query parameters,
static credential headers, values deeper than the depth cap, and any stored secret value of
the workspace wherever it appears, an upstream's echo of it included."""

from __future__ import annotations

import json
from typing import Any

from tests.registry.defs import call_endpoint, definition, ret, to
from tests.security.tenants import A_SECRET, Tenants, ok, tenants

__all__ = ["tenants"]

LEAKS = ("tok-1234567890", "deep-secret-999", "sig-abc-123", "pass-def-456",
         "static-auth-key-1", "static-access-key-2", A_SECRET)
DEEP_SCRIPT = """
let d = {password: "deep-secret-999"};
for (let i = 0; i < 40; i++) d = {x: d};
return {token: "tok-1234567890", echo: resp.auth, deep: d, plain: "kept"};
"""


def leaking_tool(upstream: str) -> dict[str, Any]:
    return definition(
        call_endpoint("e", "srv-a", "ep-a", [], nxt="h"),
        {"type": "httpCall", "id": "h", "method": "GET",
         "url": upstream + "/p?sig=sig-abc-123&pass=pass-def-456&q=1",
         "headers": {"X-Auth-Key": "static-auth-key-1", "X-Access-Key": "static-access-key-2"},
         "responseBodyVariable": "got", "onError": "continue", "defaultOutput": to("s")},
        {"type": "executeScript", "id": "s", "source": DEEP_SCRIPT,
         "inputVariables": [{"name": "resp", "value": "{{resp}}"}], "outputVariable": "out",
         "onError": "blocking", "defaultOutput": to("r")},
        ret("{{out}}"))


def leaked(text: str) -> list[str]:
    return [secret for secret in LEAKS if secret in text]


def recorded(run: dict[str, Any]) -> str:
    """What the history recorded of a run, but the script's own source code (its literals
    are what the tool's author wrote, shown to the workspace in the builder anyway)."""
    blocks = run["published"]["definition"]["blocks"]
    blocks["s"]["source"] = "<source>"
    return json.dumps(run)


async def test_the_history_and_the_debug_stream_keep_no_secret_of_any_kind(
        tenants: Tenants) -> None:
    t = tenants
    await ok(t.a, "POST", "/tools", 201, json={"id": "t-leak",
                                               "definition": leaking_tool(t.up_a.url)})
    pt = (await ok(t.a, "POST", "/tools/t-leak/publish"))["publishedToolId"]
    await ok(t.a, "PUT", "/debug/c-mask")
    result = await t.h.run(pt, contact="c-mask")
    assert result.ok, result
    # The tool itself saw the real values: the upstream echoed the secret it was sent.
    assert json.loads(result.result)["echo"] == A_SECRET
    await t.caught_up()

    run = await ok(t.a_viewer, "GET", f"/executions/{result.executionId}/history")
    assert leaked(recorded(run)) == [], leaked(recorded(run))
    returned = json.loads(run["result"])
    assert returned["token"] == "***" and returned["plain"] == "kept"
    assert returned["echo"] == "***"  # an upstream's echo of the workspace's secret
    assert "***" in json.dumps(returned["deep"])  # past the depth cap: masked, not kept
    http = next(s for s in run["steps"] if s["blockId"] == "h")
    assert "sig=***" in http["http"]["url"] and "pass=***" in http["http"]["url"]
    assert "q=1" in http["http"]["url"]
    headers = run["published"]["definition"]["blocks"]["h"]["headers"]
    assert headers == {"X-Auth-Key": "***", "X-Access-Key": "***"}

    events = await t.h.client.xrange(t.h.keys.debug("c-mask"))
    assert events, "debug was on: the run emitted debug events"
    text = "".join(fields[b"data"].decode() for _id, fields in events)
    assert leaked(text) == [], leaked(text)


async def test_a_test_run_kept_in_the_history_is_masked_the_same_way(tenants: Tenants) -> None:
    t = tenants
    await ok(t.a, "POST", "/tools", 201, json={"id": "t-leak2",
                                               "definition": leaking_tool(t.up_a.url)})
    tested = await ok(t.a, "POST", "/tools/test-flow", json={"toolId": "t-leak2"})
    assert tested["ok"] and tested["inHistory"], tested
    run = await ok(t.a_viewer, "GET", f"/executions/{tested['executionId']}/history")
    assert leaked(recorded(run)) == [], leaked(recorded(run))

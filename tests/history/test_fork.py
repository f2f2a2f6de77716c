"""``POST /api/executions/{id}/fork``: a finished run again from one of its blocks, through the
normal runtime (real worker, real API, SQLite history)."""

from __future__ import annotations

import json
from typing import Any

from tests.api.support import Api
from tests.core.tools import http, ret, script, to, tool
from tests.harness import Harness
from tests.history.test_api import both, caught_up
from tests.support.http import LoopbackServer

__all__ = ["both"]


async def test_a_fork_from_a_block_reruns_only_the_rest_with_a_changed_variable(
        both: tuple[Harness, Api], http_server: LoopbackServer) -> None:
    h, api = both
    http_server.route("GET", "/side-effect", {"done": True})
    await h.put_tool("pt-f", tool(
        "h", http("h", http_server.base + "/side-effect", to("s"), responseStatusVariable="st"),
        script("s", "return 'hi ' + name", "greet", to("r"), inputs={"name": "{{name}}"}),
        ret("r", "{{greet}}")))
    original = await h.run("pt-f", inputs={"name": "Ana"}, contact="c-7")
    assert original.ok and original.result == "hi Ana"
    await caught_up(h)
    assert len(http_server.requests) == 1

    forked = await api.ok("POST", f"/executions/{original.executionId}/fork",
                          params={"wait": "true"},
                          json={"fromBlockId": "s", "variables": {"name": "Bia"}})
    assert forked["result"]["ok"] and forked["result"]["result"] == "hi Bia"
    assert forked["forkedFrom"] == {"executionId": original.executionId, "blockId": "s"}
    assert len(http_server.requests) == 1  # the block before the fork point did not run again
    blocks = [e["blockId"] for e in forked["trace"] if e["type"] == "block"]
    assert blocks == ["s", "r"]
    # the original command's reply stream got nothing more: one answer, the original's
    results = await h.stream(h.keys.results)
    assert [r["commandId"] for r in results].count(forked["commandId"]) == 0

    await caught_up(h)
    fork_run = await api.ok("GET", f"/executions/{forked['executionId']}/history")
    assert fork_run["forkedFrom"] == forked["forkedFrom"] and fork_run["contactId"] == "c-7"
    before = await api.ok("GET", f"/executions/{original.executionId}/history")
    assert before["forks"] == [forked["executionId"]] and before["result"] == "hi Ana"
    listed = await api.ok("GET", "/executions", params={"state": "finished",
                                                        "publishedToolId": "pt-f"})
    assert {r["executionId"] for r in listed["executions"]} == {original.executionId}


async def test_a_fork_with_an_edited_definition_runs_that_definition(
        both: tuple[Harness, Api]) -> None:
    h, api = both
    await h.put_tool("pt-e", tool("s", script("s", "return 'v1'", "v", to("r")),
                                  ret("r", "{{v}}")))
    original = await h.run("pt-e")
    await caught_up(h)
    fixed = tool("s", script("s", "return 'v2'", "v", to("r")), ret("r", "{{v}}!"))
    forked = await api.ok("POST", f"/executions/{original.executionId}/fork",
                          params={"wait": "true"}, json={"fromBlockId": "s", "definition": fixed})
    assert forked["result"]["result"] == "v2!"


async def test_a_fork_is_refused_for_an_unreached_block_a_viewer_and_a_missing_run(
        both: tuple[Harness, Api]) -> None:
    h, api = both
    await h.put_tool("pt-u", tool("r", ret("r", "x"), ret("never", "y")))
    original = await h.run("pt-u")
    await caught_up(h)
    path = f"/executions/{original.executionId}/fork"
    body = await api.fails("POST", path, 400, json={"fromBlockId": "never"})
    assert "never reached" in body["message"]
    body = await api.fails("POST", path, 400, json={"fromBlockId": "nope"})
    assert "no such block" in body["message"]
    await api.fails("POST", "/executions/0-none/fork", 404, json={"fromBlockId": "r"})
    async with api.as_key(await api.new_key(role="viewer")) as viewer:
        assert (await viewer.post(path, json={"fromBlockId": "r"})).status_code == 403


async def test_a_fork_that_would_run_with_masked_secrets_is_refused_naming_them(
        both: tuple[Harness, Api], http_server: LoopbackServer) -> None:
    h, api = both
    http_server.route("GET", "/me", {"me": "ana"})
    me = http("h", http_server.base + "/me", to("s"), headers={"Authorization": "Bearer s3cr3t"},
              responseStatusVariable="st")
    await h.put_tool("pt-m", tool("h", me, script("s", "return 'key ' + apiToken", "v", to("r"),
                                                  inputs={"apiToken": "{{apiToken}}"}),
                                  ret("r", "{{v}}")))
    original = await h.run("pt-m", inputs={"apiToken": "tok-1"})
    assert original.ok and original.result == "key tok-1"
    await caught_up(h)
    path = f"/executions/{original.executionId}/fork"

    # The history holds the token and the header only as ***: running with them would send
    # "***" as a secret. Both refusals name what is missing and how to supply it.
    body = await api.fails("POST", path, 400, json={"fromBlockId": "s"})
    assert body["error"] == "fork_needs_secrets" and "apiToken" in body["message"]
    body = await api.fails("POST", path, 400, json={"fromBlockId": "h",
                                                    "variables": {"apiToken": "tok-2"}})
    assert body["error"] == "fork_needs_secrets" and "blocks h" in body["message"]
    assert len(http_server.requests) == 1  # neither refusal ran anything

    forked = await api.ok("POST", path, params={"wait": "true"},
                          json={"fromBlockId": "s", "variables": {"apiToken": "tok-2"}})
    assert forked["result"]["result"] == "key tok-2"
    fixed = tool("h", me, script("s", "return 'again ' + apiToken", "v", to("r"),
                                 inputs={"apiToken": "{{apiToken}}"}), ret("r", "{{v}}"))
    forked = await api.ok("POST", path, params={"wait": "true"},
                          json={"fromBlockId": "h", "variables": {"apiToken": "tok-3"},
                                "definition": fixed})
    assert forked["result"]["result"] == "again tok-3"
    assert http_server.requests[-1].headers["authorization"] == "Bearer s3cr3t"


async def test_a_header_that_only_names_a_variable_is_kept_so_the_fork_runs_as_recorded(
        both: tuple[Harness, Api], http_server: LoopbackServer) -> None:
    h, api = both
    http_server.route("GET", "/me", {"me": "ana"})
    await h.put_tool("pt-v", tool("h", http("h", http_server.base + "/me", to("r"),
                                            headers={"Authorization": "Bearer {{token}}"},
                                            responseStatusVariable="st"),
                                  ret("r", "{{st}}")))
    original = await h.run("pt-v", inputs={"token": "tok-1"})
    assert original.ok
    await caught_up(h)
    run = await api.ok("GET", f"/executions/{original.executionId}/history")
    recorded = run["published"]["definition"]["blocks"]["h"]["headers"]
    assert recorded == {"Authorization": "Bearer {{token}}"}  # a reference, no secret in it
    assert "tok-1" not in json.dumps(run)
    path = f"/executions/{original.executionId}/fork"
    body = await api.fails("POST", path, 400, json={"fromBlockId": "h"})
    assert "variables token" in body["message"]
    forked = await api.ok("POST", path, params={"wait": "true"},
                          json={"fromBlockId": "h", "variables": {"token": "tok-2"}})
    assert forked["result"]["result"] == "200"
    assert http_server.requests[-1].headers["authorization"] == "Bearer tok-2"


async def chatflow_fork(h: Harness, execution_id: str, *argv: str) -> dict[str, Any]:
    """`chatflow fork EXECUTION_ID ARGV...` in a process of its own; its answer."""
    import asyncio
    import os
    import sys

    env = {**os.environ, "REDIS_URL": h.url, "CHATFLOW_PREFIX": h.settings.prefix,
           "CHATFLOW_HISTORY_URL": h.settings.history_url}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "chatflow.handlers.cli", "fork", execution_id, *argv, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    answer: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return answer


async def test_chatflow_fork_prints_the_fixed_answer(both: tuple[Harness, Api]) -> None:
    h, _api = both
    await h.put_tool("pt-c", tool("s", script("s", "return 'n=' + n", "v", to("r"),
                                              inputs={"n": "{{n}}"}), ret("r", "{{v}}")))
    original = await h.run("pt-c", inputs={"n": "1"})
    await caught_up(h)
    answer = await chatflow_fork(h, original.executionId, "--from", "s", "--var", "n=2")
    assert answer["result"] == "n=2" and answer["forkedFrom"]["blockId"] == "s"


async def test_chatflow_fork_sets_one_field_of_an_object_variable_and_keeps_the_others(
        both: tuple[Harness, Api]) -> None:
    """Issue 32: a dotted --var was a variable literally named `order.total`, which no template
    reads; it now changes that field of the run's `order`, keeping `currency`."""
    h, _api = both
    await h.put_tool("pt-o", tool("s", script("s", "return o.total + ' ' + o.currency", "v",
                                              to("r"), inputs={"o": "{{order}}"}),
                                  ret("r", "{{v}}")))
    original = await h.run("pt-o", variables={"order": {"total": 10, "currency": "BRL"}})
    assert original.result == "10 BRL"
    await caught_up(h)
    answer = await chatflow_fork(h, original.executionId, "--from", "s",
                                 "--var", "order.total=50")
    assert answer["result"] == "50 BRL"

"""Published versions over the API: numbered, listed, read, compared and rolled back; a real
worker then runs the rolled-back definition."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.api.support import Api
from tests.harness import Harness
from tests.registry.defs import definition, ret, to

SCRIPT = {"type": "executeScript", "id": "s", "source": "return 'v'",
          "inputVariables": [], "outputVariable": "x", "defaultOutput": to("r")}


def version(n: int, **extra: object) -> dict[str, object]:
    return definition({**SCRIPT, "source": f"return 'v{n}'"}, ret("{{x}}"), **extra)


@pytest.fixture
async def worker(api: Api) -> AsyncIterator[Harness]:
    harness = Harness(api.settings.redis_url or "", api.settings.prefix)
    await harness.start_worker()
    try:
        yield harness
    finally:
        await harness.close()


async def publish(api: Api, tool_id: str, defn: dict[str, object], note: str) -> dict[str, object]:
    await api.ok("PATCH", f"/tools/{tool_id}", json={"definition": defn})
    published: dict[str, object] = await api.ok("POST", f"/tools/{tool_id}/publish",
                                                json={"note": note})
    return published


async def test_three_publishes_are_three_versions_diffed_rolled_back_and_run(
        api: Api, worker: Harness) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-v", "name": "Versioned",
                                              "definition": version(1)})
    first = await api.ok("POST", "/tools/t-v/publish", json={"note": "first"})
    # The version shown after a publish is the published version's number (not the draft's
    # revision, which a save and a publish both bump).
    assert first["publishedVersion"] == 1 and first["publishedTool"]["version"] == 1
    second = await publish(api, "t-v", version(2), "second")
    assert second["publishedVersion"] == 2
    moved = version(3)
    moved["blocks"]["extra"] = {"type": "return", "id": "extra", "value": "x"}
    third = await publish(api, "t-v", moved, "third")
    assert third["publishedVersion"] == 3
    pt = first["publishedToolId"]

    listed = await api.ok("GET", "/tools/t-v/versions")
    assert listed["current"] == 3 and listed["callers"] == []
    assert [v["version"] for v in listed["versions"]] == [3, 2, 1]
    assert [v["note"] for v in listed["versions"]] == ["third", "second", "first"]
    newest = listed["versions"][0]
    assert newest["keyId"] == api.key_id and newest["keyName"] == "tests"
    assert newest["publishedToolId"] == pt and "definition" not in newest
    assert len({v["hash"] for v in listed["versions"]}) == 3

    one = await api.ok("GET", "/tools/t-v/versions/1")
    assert one["definition"] == version(1)
    await api.fails("GET", "/tools/t-v/versions/9", 404)
    # A digit Python's int() cannot read (the fuzzer's superscript one: a 500 before).
    await api.fails("GET", "/tools/t-v/versions/%C2%B9", 404)
    await api.fails("GET", "/tools/t-v/diff", 400, params={"from": "\u00b9"})

    diff = await api.ok("GET", "/tools/t-v/diff", params={"from": "1", "to": "3"})
    assert diff["blocks"]["added"] == [{"id": "extra", "type": "return"}]
    assert diff["blocks"]["removed"] == []
    assert diff["blocks"]["changed"] == {"s": [{"field": "source", "from": "return 'v1'",
                                                 "to": "return 'v3'"}]}
    await api.fails("GET", "/tools/t-v/diff", 400, params={"from": "one"})

    ran = await worker.run(pt)
    assert ran.ok and ran.result == "v3"
    back = await api.ok("POST", "/tools/t-v/rollback", json={"version": 1, "note": "v3 broke"})
    assert back["publishedVersion"] == 4
    assert back["rolledBack"]["rollbackOf"] == 1 and back["rolledBack"]["note"] == "v3 broke"
    assert back["rolledBack"]["hash"] == listed["versions"][-1]["hash"]  # v1's record again
    assert back["publishedToolId"] == pt
    ran = await worker.run(pt)
    assert ran.ok and ran.result == "v1"
    # The run used version 1's definition: the hash it ran is the versions' hash.
    started = [e for e in await worker.trace(ran.executionId or "") if e.type == "started"]
    assert started[0].detail and started[0].detail["defHash"] == back["rolledBack"]["hash"]


async def test_a_versions_events_are_in_the_audit_trail_with_their_actor(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-a", "definition": version(1)})
    await api.ok("POST", "/tools/t-a/publish", json={})
    await api.ok("POST", "/tools/t-a/rollback", json={"version": 1})
    trail = await api.ok("GET", "/audit", params={"objectId": "t-a"})
    published = [e for e in trail if e["type"] == "tool.published"]
    assert [e["actor"] for e in published] == [api.key_id, api.key_id]
    assert [e.get("detail") for e in published] == [{"version": 1}, {"version": 2,
                                                                      "rollbackOf": 1}]


async def test_a_rollback_names_the_callers_and_refuses_what_cannot_publish(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-child", "definition": version(1)})
    child = await api.ok("POST", "/tools/t-child/publish")
    caller = definition({"type": "callTool", "id": "c", "toolId": "t-child",
                         "publishedToolId": child["publishedToolId"], "inputVariables": [],
                         "outputVariable": "o", "defaultOutput": to("r")}, ret("{{o}}"))
    await api.ok("POST", "/tools", 201, json={"id": "t-caller", "name": "Caller",
                                              "definition": caller})
    await api.ok("POST", "/tools/t-caller/publish")
    listed = await api.ok("GET", "/tools/t-child/versions")
    assert listed["callers"] == [{"id": "t-caller", "name": "Caller"}]
    await api.fails("POST", "/tools/t-child/rollback", 404, json={"version": 7})
    await api.fails("POST", "/tools/t-child/rollback", 400, json={"version": 0})
    await api.fails("POST", "/tools/t-child/rollback", 400, json={"version": 1, "extra": 1})


async def test_a_rollback_is_gated_by_the_saved_cases_like_a_publish(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-g", "definition": version(1)})
    await api.ok("POST", "/tools/t-g/publish", json={"note": "v1"})
    await publish(api, "t-g", version(2), "v2 says v2")
    await api.ok("POST", "/tools/t-g/tests", 201, json={"id": "says-v2", "name": "says v2",
                                                        "expect": {"result": "v2"}})
    refused = await api.fails("POST", "/tools/t-g/rollback", 409,
                              json={"version": 1, "note": "back"})
    assert refused["error"] == "tests_failed" and (refused["passed"], refused["failed"]) == (0, 1)
    (failure,) = refused["failures"]
    assert failure["id"] == "says-v2" and failure["result"] == "v1"  # version 1 ran, not the draft
    assert (await api.ok("GET", "/tools/t-g/versions"))["current"] == 2  # nothing published
    # The same refusal, body for body, as a publish of that definition.
    await api.ok("PATCH", "/tools/t-g", json={"definition": version(1)})
    as_publish = await api.fails("POST", "/tools/t-g/publish", 409, json={})
    assert set(as_publish) == set(refused)
    assert ({k: v for k, v in as_publish["failures"][0].items() if k != "executionId"}
            == {k: v for k, v in failure.items() if k != "executionId"})

    editor = api.as_key(await api.new_key(role="editor"))
    forced = await editor.post("/tools/t-g/rollback", json={"version": 1, "force": True,
                                                            "note": "v2 breaks billing"})
    assert forced.status_code == 200, forced.text
    done = forced.json()
    assert done["publishedVersion"] == 3
    assert done["tests"] == {"passed": 0, "failed": 1, "forced": True}
    kept = await api.ok("GET", "/tools/t-g/versions/3")
    assert (kept["note"], kept["forced"], kept["rollbackOf"]) == (
        "v2 breaks billing", {"failed": ["says-v2"]}, 1)
    assert kept["definition"] == version(1)
    await editor.aclose()

    passing = await api.ok("POST", "/tools/t-g/rollback", json={"version": 2})
    assert passing["publishedVersion"] == 4
    assert passing["tests"] == {"passed": 1, "failed": 0, "forced": False}
    assert not passing["rolledBack"].get("forced")

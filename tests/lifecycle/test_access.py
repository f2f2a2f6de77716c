"""Versions and test cases under the workspace rules: a viewer reads them and runs nothing;
another workspace's tool answers every route exactly as a missing one."""

from __future__ import annotations

from tests.api.support import Api
from tests.registry.defs import returning

CASE = {"id": "c1", "name": "returns ok", "expect": {"result": "ok"}}


async def seed(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-1", "definition": returning()})
    await api.ok("POST", "/tools/t-1/tests", 201, json=CASE)
    await api.ok("POST", "/tools/t-1/publish", json={"note": "one"})


async def test_a_viewer_reads_versions_and_cases_and_runs_nothing(api: Api) -> None:
    await seed(api)
    events = await api.client.xlen(api.keys.registry)
    async with api.as_key(await api.new_key("default", "viewer")) as viewer:
        for path in ("/tools/t-1/versions", "/tools/t-1/versions/1", "/tools/t-1/tests",
                     "/tools/t-1/tests/c1", "/tools/t-1/diff?from=1&to=draft"):
            response = await viewer.get(path)
            assert response.status_code == 200, (path, response.text)
        for method, path, body in (
                ("POST", "/tools/t-1/tests/run", {}), ("POST", "/tools/t-1/rollback",
                                                       {"version": 1}),
                ("POST", "/tools/t-1/tests", CASE), ("PUT", "/tools/t-1/tests/c1", CASE),
                ("DELETE", "/tools/t-1/tests/c1", None),
                ("POST", "/tools/t-1/publish", {"force": True}),
                ("POST", "/executions/0-x/test-case", {})):
            response = await viewer.request(method, path, json=body)
            assert response.status_code == 403, (method, path, response.text)
    assert await api.client.xlen(api.keys.registry) == events


async def test_another_workspace_gets_404_as_for_a_missing_tool(api: Api) -> None:
    await seed(api)
    events = await api.client.xlen(api.keys.registry)
    async with api.as_key(await api.new_key("other", "admin")) as other:
        for method, path, body in (
                ("GET", "/tools/{t}/versions", None), ("GET", "/tools/{t}/versions/1", None),
                ("GET", "/tools/{t}/diff?from=1&to=draft", None),
                ("POST", "/tools/{t}/rollback", {"version": 1}),
                ("GET", "/tools/{t}/tests", None), ("GET", "/tools/{t}/tests/c1", None),
                ("POST", "/tools/{t}/tests", CASE), ("PUT", "/tools/{t}/tests/c1", CASE),
                ("DELETE", "/tools/{t}/tests/c1", None), ("POST", "/tools/{t}/tests/run", {}),
                ("POST", "/tools/{t}/publish", {"force": True})):
            ours = await other.request(method, path.format(t="t-1"), json=body)
            missing = await other.request(method, path.format(t="t-none"), json=body)
            assert ours.status_code == 404 == missing.status_code, (method, path, ours.text)
            assert ours.json()["message"] == missing.json()["message"].replace("t-none", "t-1")
    assert await api.client.xlen(api.keys.registry) == events

"""The tool's life from the command line: versions, diff, rollback, the gated publish, and
``chatflow test`` with JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.api.support import Api
from tests.lifecycle.conftest import Shell
from tests.registry.defs import definition, ret, to


def scripted(text: str) -> dict[str, object]:
    return definition({"type": "executeScript", "id": "s", "source": f"return '{text}'",
                       "inputVariables": [], "outputVariable": "x", "defaultOutput": to("r")},
                      ret("{{x}}"))


async def test_versions_diff_and_rollback_from_the_command_line(api: Api, shell: Shell) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-c", "definition": scripted("a")})
    await api.ok("POST", "/tools/t-c/publish", json={"note": "a"})
    changed = scripted("b")
    changed["blocks"]["r"]["value"] = "[{{x}}]"
    await api.ok("PATCH", "/tools/t-c", json={"definition": changed})
    published = await shell("tools", "publish", "t-c", "--note", "b from the shell")
    assert published.code == 0, published.err
    assert json.loads(published.out)["publishedVersion"] == 2

    listed = await shell("tools", "versions", "t-c")
    versions = json.loads(listed.out)["versions"]
    assert [(v["version"], v["keyId"], v["note"]) for v in versions] == [
        (2, "shell", "b from the shell"), (1, api.key_id, "a")]

    diff = await shell("tools", "diff", "t-c", "1", "2")
    assert diff.code == 0
    assert diff.out.splitlines() == [
        "tool t-c: version 1 → version 2",
        "  ~ block r",
        '      value: "{{x}}" → "[{{x}}]"',
        "  ~ block s",
        '      source: "return \'a\'" → "return \'b\'"']
    same = await shell("tools", "diff", "t-c", "2", "draft")
    assert same.out.splitlines()[1:] == ["  no difference"]
    assert (await shell("tools", "diff", "t-c", "1", "nine")).code == 2

    back = await shell("tools", "rollback", "t-c", "1", "--note", "b broke")
    assert back.code == 0, back.err
    assert back.out.startswith("tool t-c: version 1 published again as version 3")
    latest = (await api.ok("GET", "/tools/t-c/versions"))["versions"][0]
    assert (latest["rollbackOf"], latest["note"], latest["keyId"]) == (1, "b broke", "shell")
    missing = await shell("tools", "rollback", "t-c", "9")
    assert missing.code == 2 and "no version 9" in missing.err


async def test_chatflow_tools_rollback_runs_the_saved_cases_on_that_version(
        api: Api, shell: Shell) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-r", "definition": scripted("one")})
    await api.ok("POST", "/tools/t-r/publish")
    await api.ok("PATCH", "/tools/t-r", json={"definition": scripted("two")})
    await api.ok("POST", "/tools/t-r/publish")
    await api.ok("POST", "/tools/t-r/tests", 201, json={
        "id": "two", "name": "says two", "expect": {"result": "two"}})
    refused = await shell("tools", "rollback", "t-r", "1", "--note", "back")
    assert refused.code == 2 and "1 of 1 saved test case(s) fail" in refused.err
    assert (await api.ok("GET", "/tools/t-r"))["publishedVersion"] == 2
    forced = await shell("tools", "rollback", "t-r", "1", "--force", "--note", "two is wrong")
    assert forced.code == 0, forced.err
    assert forced.out.splitlines()[1] == (
        "saved test cases: 0 passed, 1 failed (rolled back anyway: forced)")
    latest = (await api.ok("GET", "/tools/t-r/versions"))["versions"][0]
    assert (latest["version"], latest["rollbackOf"], latest["note"], latest["forced"]) == (
        3, 1, "two is wrong", {"failed": ["two"]})
    passing = await shell("tools", "rollback", "t-r", "2")
    assert passing.code == 0, passing.err
    assert passing.out.splitlines()[1] == "saved test cases: 1 passed, 0 failed"


async def test_chatflow_test_runs_the_workspaces_cases_and_writes_junit(
        api: Api, shell: Shell, tmp_path: Path) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-good", "name": "Good",
                                              "definition": scripted("fine")})
    await api.ok("POST", "/tools/t-good/tests", 201, json={
        "id": "fine", "name": "says fine", "expect": {"result": "fine"}})
    await api.ok("POST", "/tools", 201, json={"id": "t-bad", "name": "Bad",
                                              "definition": scripted("oops")})
    await api.ok("POST", "/tools/t-bad/tests", 201, json={
        "id": "fine", "name": "should say fine", "expect": {"result": "fine"}})
    await api.ok("POST", "/tools/t-bad/tests", 201, json={
        "id": "any", "name": "says something", "expect": {"resultMatches": "."}})
    report = tmp_path / "junit.xml"

    ran = await shell("test", "--junit", str(report))
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert "t-bad (Bad), draft: 1 passed, 1 failed" in lines
    assert '       result: expected "fine", got "oops"' in lines
    assert "t-good (Good), draft: 1 passed, 0 failed" in lines
    suites = ET.parse(report).getroot()
    assert (suites.get("tests"), suites.get("failures")) == ("3", "1")
    bad = next(s for s in suites if s.get("name") == "t-bad")
    failed = [c for c in bad if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["fine: should say fine"]
    failure = failed[0].find("failure")
    assert failure is not None and 'expected "fine"' in (failure.get("message") or "")

    only_good = await shell("test", "t-good", "--junit", str(report))
    assert only_good.code == 0
    assert ET.parse(report).getroot().get("failures") == "0"
    assert (await shell("test", "t-none")).code == 2
    assert (await shell("test", "t-good", "--published")).code == 2  # never published


async def test_chatflow_publish_file_runs_the_tools_saved_cases_first(
        api: Api, shell: Shell, tmp_path: Path) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-file", "definition": scripted("one")})
    pt = (await api.ok("POST", "/tools/t-file/publish"))["publishedToolId"]
    await api.ok("POST", "/tools/t-file/tests", 201, json={
        "id": "one", "name": "says one", "expect": {"result": "one"}})
    file = tmp_path / "tool.json"
    file.write_text(json.dumps({"id": pt, "toolId": "t-file", "definition": scripted("two")}))
    refused = await shell("publish", str(file))
    assert refused.code == 2 and "1 of 1 saved test case(s) fail" in refused.err
    assert (await api.ok("GET", "/tools/t-file"))["publishedVersion"] == 1
    await api.ok("PUT", "/tools/t-file/tests/one", json={"name": "says two",
                                                          "expect": {"result": "two"}})
    published = await shell("publish", str(file))
    assert published.code == 0, published.err
    assert (await api.ok("GET", "/tools/t-file"))["publishedVersion"] == 2

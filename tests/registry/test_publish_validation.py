"""Publish-time validation: one test per rule, each problem named by its JSON path."""

from __future__ import annotations

from typing import Any

from tests.api.support import Api
from tests.registry.defs import END, call_ai, call_tool, definition, ret, returning, to


async def draft(api: Api, tool_id: str, definition_: dict[str, Any], name: str = "") -> None:
    await api.ok("POST", "/tools", 201, json={"id": tool_id, "name": name or tool_id,
                                              "definition": definition_})


async def published(api: Api, tool_id: str, definition_: dict[str, Any] | None = None) -> str:
    await draft(api, tool_id, definition_ or returning(tool_id))
    body = await api.ok("POST", f"/tools/{tool_id}/publish")
    return str(body["publishedToolId"])


async def problems(api: Api, tool_id: str) -> list[dict[str, str]]:
    body = await api.fails("POST", f"/tools/{tool_id}/publish", 400)
    assert body["error"] == "invalid_definition"
    found: list[dict[str, str]] = body["problems"]
    return found


def paths(found: list[dict[str, str]]) -> list[str]:
    return [p["path"] for p in found]


async def test_a_definition_of_the_wrong_shape_names_every_broken_field(api: Api) -> None:
    broken = {"blocks": {"h": {"type": "httpCall", "id": "h", "defaultOutput": END},
                         "s": {"type": "executeScript", "id": "s", "source": "1",
                               "defaultOutput": END}},
              "onboardingBlockId": "h"}
    await draft(api, "t-shape", broken)
    found = paths(await problems(api, "t-shape"))
    assert "definition.blocks.h.url" in found
    assert "definition.blocks.h.method" in found
    assert "definition.blocks.s.outputVariable" in found


async def test_a_missing_onboarding_block_is_reported_at_its_path(api: Api) -> None:
    await draft(api, "t-onb", definition(ret(), start="nowhere"))
    found = await problems(api, "t-onb")
    assert paths(found) == ["definition.onboardingBlockId"]
    assert "nowhere" in found[0]["message"]


async def test_a_target_that_names_no_block_is_reported_at_its_path(api: Api) -> None:
    block = {"type": "httpCall", "id": "h", "url": "http://x", "method": "GET",
             "defaultOutput": to("ghost"),
             "outputConditions": [{"id": "c1", "rules": [], "target": to("ghost2")}]}
    await draft(api, "t-target", definition(block))
    found = paths(await problems(api, "t-target"))
    assert found == ["definition.blocks.h.defaultOutput.blockId",
                     "definition.blocks.h.outputConditions.0.target.blockId"]


async def test_a_call_tool_block_must_name_an_existing_published_tool(api: Api) -> None:
    await draft(api, "t-caller", definition(call_tool("c", "t-nobody", "pt-nobody"), ret()))
    found = await problems(api, "t-caller")
    assert paths(found) == ["definition.blocks.c.publishedToolId"]
    assert "pt-nobody" in found[0]["message"]


async def test_a_call_tool_block_may_not_call_a_tool_that_was_never_published(api: Api) -> None:
    await draft(api, "t-draft-only", returning())
    await draft(api, "t-caller2", definition(call_tool("c", "t-draft-only", "pt-x"), ret()))
    found = await problems(api, "t-caller2")
    assert "not published" in found[0]["message"]


async def test_a_call_tool_block_may_not_call_a_tool_in_the_trash(api: Api) -> None:
    pt = await published(api, "t-binned")
    await api.ok("DELETE", "/tools/t-binned")
    await draft(api, "t-caller3", definition(call_tool("c", "t-binned", pt), ret()))
    found = await problems(api, "t-caller3")
    assert paths(found) == ["definition.blocks.c.publishedToolId"]
    assert "trash" in found[0]["message"]


async def test_a_cycle_of_tools_is_refused_however_long(api: Api) -> None:
    # t0 <- t1 <- t2 <- t3 <- t4 are published; t0 then tries to call t4: a 5-long cycle.
    pts = [await published(api, "t0")]
    for i in range(1, 5):
        pts.append(await published(api, f"t{i}",
                                   definition(call_tool("c", f"t{i - 1}", pts[-1]), ret())))
    await api.ok("PATCH", "/tools/t0", json={"definition": definition(
        call_tool("c", "t4", pts[4]), ret())})
    found = await problems(api, "t0")
    assert paths(found) == ["definition.blocks.c.publishedToolId"]
    assert found[0]["message"].startswith("cycle of tools: t0 (t0) → t4 (t4) → t3 (t3)")
    assert found[0]["message"].endswith("→ t0 (t0)")


async def test_a_tool_calling_itself_is_a_cycle(api: Api) -> None:
    pt = await published(api, "t-self")
    await api.ok("PATCH", "/tools/t-self", json={"definition": definition(
        call_tool("c", "t-self", pt), ret())})
    found = await problems(api, "t-self")
    assert "cycle of tools" in found[0]["message"]


async def test_a_call_ai_block_needs_an_existing_llm_credential(api: Api) -> None:
    await draft(api, "t-ai", definition(call_ai("ai", "cred-missing"), ret()))
    found = await problems(api, "t-ai")
    assert paths(found) == ["definition.blocks.ai.llmCredentialId"]
    await api.ok("POST", "/llm-credentials", 201,
                 json={"id": "cred-missing", "name": "OpenAI", "apiKey": "sk-test-123"})
    await api.ok("POST", "/tools/t-ai/publish")


async def test_a_tool_enabled_for_ai_needs_a_valid_slug(api: Api) -> None:
    await draft(api, "t-slug", definition(ret(), enabledForAI=True, slug="not a slug!"))
    found = await problems(api, "t-slug")
    assert paths(found) == ["definition.slug"]
    await api.ok("PATCH", "/tools/t-slug", json={"definition": definition(
        ret(), enabledForAI=True, slug="cep_lookup-2")})
    await api.ok("POST", "/tools/t-slug/publish")


async def test_every_problem_is_reported_at_once(api: Api) -> None:
    await draft(api, "t-many", definition(call_ai("ai", "nope"), call_tool("c", "x", "pt-x"),
                                          ret(), start="ai", enabledForAI=True, slug=""))
    found = paths(await problems(api, "t-many"))
    assert set(found) == {"definition.blocks.ai.llmCredentialId",
                          "definition.blocks.c.publishedToolId", "definition.slug"}


async def test_a_native_tool_is_never_publishable(api: Api) -> None:
    await api.ok("POST", "/tools", 201, json={"id": "t-native", "name": "Sentiment",
                                              "kind": "native", "nativeName": "updateSentiment"})
    found = await problems(api, "t-native")
    assert paths(found) == ["kind"]

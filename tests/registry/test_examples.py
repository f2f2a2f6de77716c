"""``chatflow up`` publishes the example tools through the registry, idempotently."""

from __future__ import annotations

import json

import pytest

from chatflow.handlers.controlplane.examples import examples, in_call_order, publish_examples
from chatflow.handlers.redis_client import make_client
from chatflow.handlers.registry import Conflict, Registry
from chatflow.handlers.registry.crypto import SecretBox
from chatflow.handlers.registry.models import ToolCreate
from chatflow.handlers.registry.tools import ToolOps
from tests.api.support import ENCRYPTION_KEY, Api
from tests.harness import Harness
from tests.registry.defs import returning
from tests.registry.test_publish_validation import published

EXAMPLES = {"t-cep": "pt-cep", "t-delivery-quote": "pt-delivery-quote",
            "t-greeting": "pt-greeting", "t-shipping-quote": "pt-shipping-quote"}
ALL = ["pt-cep", "pt-delivery-quote", "pt-greeting", "pt-shipping-quote"]


async def up(api: Api) -> list[str]:
    return await publish_examples(api.settings, api.settings.redis_url or "")


async def registry_events(api: Api) -> int:
    return int(await api.client.xlen(api.keys.registry))


async def test_the_published_examples_are_listed_by_the_api_under_their_fixed_ids(
        api: Api) -> None:
    assert await up(api) == ALL
    listed = await api.ok("GET", "/tools")
    assert {t["id"]: t["publishedToolId"] for t in listed} == EXAMPLES
    assert {t["status"] for t in listed} == {"published"}
    shipped = {e.pt: e for e in examples()}
    for pt, example in shipped.items():
        record = await api.get_key(api.keys.tool(pt))
        assert record == {"id": pt, "toolId": example.tool_id, "name": example.name,
                          "definition": example.definition, "workspace": "default"}


async def test_a_worker_runs_an_example_published_through_the_registry(
        api: Api, harness: Harness) -> None:
    await up(api)
    result = await harness.run("pt-greeting", inputs={"name": "  ana "})
    assert result.ok and result.result == "Olá, Ana!"


async def test_publishing_the_examples_again_appends_nothing_and_creates_no_duplicate(
        api: Api) -> None:
    first = await up(api)
    events = await registry_events(api)
    assert events == 2 * len(EXAMPLES)  # created and published, each
    assert await up(api) == first
    assert await registry_events(api) == events
    assert len(await api.ok("GET", "/tools")) == len(EXAMPLES)


async def test_an_example_whose_registry_version_differs_from_the_shipped_one_is_published_again(
        api: Api) -> None:
    await up(api)
    await api.ok("PATCH", "/tools/t-greeting", json={"definition": returning("old greeting")})
    await api.ok("POST", "/tools/t-greeting/publish")
    assert await up(api) == ALL
    greeting = await api.ok("GET", "/tools/t-greeting")
    shipped = next(e for e in examples() if e.pt == "pt-greeting")
    assert greeting["publishedToolId"] == "pt-greeting" and greeting["status"] == "published"
    assert greeting["publishedTool"]["definition"] == shipped.definition
    assert (await api.get_key(api.keys.tool("pt-greeting")))["definition"] == shipped.definition
    assert len(await api.ok("GET", "/tools")) == len(EXAMPLES)


async def test_an_edited_but_unpublished_draft_of_an_example_is_left_alone(api: Api) -> None:
    await up(api)
    await api.ok("PATCH", "/tools/t-greeting", json={"definition": returning("work in progress")})
    events = await registry_events(api)
    await up(api)
    assert await registry_events(api) == events
    assert (await api.ok("GET", "/tools/t-greeting"))["status"] == "modified"


async def test_a_rebuild_keeps_the_tool_keys_of_the_examples(api: Api) -> None:
    await up(api)
    await api.client.delete(*(api.keys.tool(pt) for pt in EXAMPLES.values()),
                            api.keys.registry_view("tools"))
    client = make_client(api.settings.redis_url or "")
    try:
        assert await Registry(client, api.keys, SecretBox(ENCRYPTION_KEY)).rebuild() == 2 * len(EXAMPLES)
    finally:
        await client.aclose()
    for tool_id, pt in EXAMPLES.items():
        assert (await api.get_key(api.keys.tool(pt)))["toolId"] == tool_id
    assert len(await api.ok("GET", "/tools")) == len(EXAMPLES)


async def test_a_tool_key_written_by_an_older_chatflow_up_is_replaced_by_the_registry_record(
        api: Api) -> None:
    await api.client.set(api.keys.tool("pt-greeting"), json.dumps({"stale": True}))
    await up(api)
    assert (await api.get_key(api.keys.tool("pt-greeting")))["toolId"] == "t-greeting"


async def test_an_example_in_the_trash_stays_there(api: Api) -> None:
    await up(api)
    await api.ok("DELETE", "/tools/t-greeting")
    assert await up(api) == [pt for pt in ALL if pt != "pt-greeting"]
    assert await api.client.exists(api.keys.tool("pt-greeting")) == 0
    listed = await api.ok("GET", "/tools", params={"includeDeleted": "true"})
    assert {t["id"]: bool(t["deletedAt"]) for t in listed}["t-greeting"] is True


async def test_an_example_id_owned_by_another_tool_is_a_conflict_and_creates_nothing(
        api: Api) -> None:
    client = make_client(api.settings.redis_url or "")
    try:
        tools = ToolOps(Registry(client, api.keys, SecretBox(ENCRYPTION_KEY)))
        await tools.create(ToolCreate(id="t-impostor", name="x", definition=returning()))
        await tools.publish("t-impostor", published_id="pt-cep")
    finally:
        await client.aclose()
    with pytest.raises(Conflict, match="belongs to tool 't-impostor'"):
        await up(api)
    assert [t["id"] for t in await api.ok("GET", "/tools")] == ["t-impostor"]


async def test_a_tool_published_before_keeps_its_id_when_another_is_asked_for(api: Api) -> None:
    pt = await published(api, "t-once")
    client = make_client(api.settings.redis_url or "")
    try:
        tools = ToolOps(Registry(client, api.keys, SecretBox(ENCRYPTION_KEY)))
        with pytest.raises(Conflict) as caught:
            await tools.publish("t-once", published_id="pt-other")
        assert caught.value.code == "published_id_mismatch"
        assert (await tools.publish("t-once", published_id=pt))["publishedToolId"] == pt
    finally:
        await client.aclose()


def test_examples_are_published_callees_first() -> None:
    order = [e.pt for e in in_call_order(list(reversed(examples())))]
    assert order.index("pt-cep") < order.index("pt-delivery-quote")

"""The per-contact debug flag belongs to the workspaces that switched it on: another
workspace can neither read nor switch off their claim, and the runtime's key
``debug:contact:{id}`` (SPEC) stays on while any workspace holds it."""

from __future__ import annotations

from tests.api.support import Api


async def test_a_workspace_cannot_switch_off_another_workspaces_debug_flag(api: Api) -> None:
    flag = api.keys.debug_flag("5511900001111")
    async with api.as_key(await api.new_key(workspace="a", role="editor")) as a, \
            api.as_key(await api.new_key(workspace="b", role="editor")) as b:
        assert (await b.put("/debug/5511900001111")).json()["enabled"] is True
        answer = await a.delete("/debug/5511900001111")
        assert answer.status_code == 200 and answer.json()["enabled"] is False
        assert await api.client.exists(flag), "workspace a switched off b's debugging"
        assert (await b.get("/debug/5511900001111")).json()["enabled"] is True
        (await b.delete("/debug/5511900001111")).raise_for_status()
        assert not await api.client.exists(flag)


async def test_a_viewer_reads_only_the_flags_its_own_workspace_set(api: Api) -> None:
    async with api.as_key(await api.new_key(workspace="b", role="editor")) as b, \
            api.as_key(await api.new_key(workspace="a", role="viewer")) as viewer_a, \
            api.as_key(await api.new_key(workspace="b", role="viewer")) as viewer_b:
        (await b.put("/debug/5511900002222")).raise_for_status()
        assert (await viewer_a.get("/debug/5511900002222")).json()["enabled"] is False
        assert (await viewer_b.get("/debug/5511900002222")).json()["enabled"] is True
        # a flag set by hand (SET debug:contact:ID 1, SPEC) is no workspace's to show
        await api.client.set(api.keys.debug_flag("5511900003333"), "1")
        assert (await viewer_b.get("/debug/5511900003333")).json()["enabled"] is False


async def test_the_flag_stays_on_until_the_last_workspace_switches_it_off(api: Api) -> None:
    flag = api.keys.debug_flag("5511900004444")
    async with api.as_key(await api.new_key(workspace="a", role="editor")) as a, \
            api.as_key(await api.new_key(workspace="b", role="admin")) as b:
        for client in (a, b):
            (await client.put("/debug/5511900004444")).raise_for_status()
        (await a.delete("/debug/5511900004444")).raise_for_status()
        assert await api.client.get(flag) == b"1"
        assert (await a.get("/debug/5511900004444")).json()["enabled"] is False
        (await b.delete("/debug/5511900004444")).raise_for_status()
        assert not await api.client.exists(flag)
        assert not await api.client.exists(api.keys.debug_owners("5511900004444"))


async def test_switching_off_a_flag_set_by_hand_leaves_it_on(api: Api) -> None:
    flag = api.keys.debug_flag("5511900005555")
    await api.client.set(flag, "1")
    await api.ok("DELETE", "/debug/5511900005555")
    assert await api.client.exists(flag)

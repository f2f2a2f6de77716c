"""The Studio's shell in a real browser: sign-in, navigation, sign-out, CSP, offline docs."""

from __future__ import annotations

from playwright.async_api import expect

from chatflow.handlers.controlplane.apikeys import create_api_key, revoke_api_key
from tests.studio.support import Studio


async def test_signing_in_shows_the_tools_list_and_signing_out_returns_to_sign_in(studio: Studio) -> None:
    page = studio.page
    await page.goto(studio.url)
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await studio.shot("sign-in")
    await studio.sign_in()
    await expect(page.get_by_role("heading", name="Tools")).to_be_visible()
    assert studio.admin_key not in page.url
    stored = await page.evaluate("sessionStorage.getItem('chatflow.studio.key')")
    assert stored == studio.admin_key
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('chatflow.studio.key')") is None


async def test_the_studio_is_sent_with_a_policy_that_allows_no_inline_script(studio: Studio) -> None:
    response = await studio.http.get(studio.url)
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in response.text and "style=" not in response.text


async def test_the_api_docs_render_from_the_wheel_without_a_cdn(studio: Studio) -> None:
    page = studio.page
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(studio.base) else None)
    await page.goto(f"{studio.base}/api/docs")
    await expect(page.get_by_text("chatflow-agent").first).to_be_visible()
    await expect(page.get_by_text("/api/tools/test-flow").first).to_be_visible()
    await studio.shot("api-docs")
    assert outside == []


async def test_a_viewer_sees_every_page_without_write_controls(studio: Studio) -> None:
    page = studio.page
    definition = {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r", "value": "x"}}}
    await studio.ok("POST", "/tools", 201, json={"id": "t-seen", "name": "Seen", "definition": definition})
    await studio.ok("POST", "/tools", 201, json={"id": "t-gone", "name": "Gone"})
    await studio.ok("DELETE", "/tools/t-gone")
    server = await studio.ok("POST", "/integration-servers", 201,
                             json={"name": "Shop", "baseUrl": "https://shop.example"})
    await studio.sign_in(studio.viewer_key)
    await expect(page.get_by_text("viewer")).to_be_visible()
    await expect(page.get_by_role("link", name="Seen")).to_be_visible()
    await expect(page.get_by_role("button", name="New tool")).to_have_count(0)
    await page.get_by_role("link", name="Seen").click()
    await expect(page.get_by_role("heading", name="Seen")).to_be_visible()
    for name in ("Save draft", "Publish", "Move to trash", "Run flow", "Test block", "Undo", "Layout",
                 "Add httpCall block", "Add condition"):
        await expect(page.get_by_role("button", name=name)).to_have_count(0)
    await expect(page.get_by_label("Definition (JSON)")).not_to_be_editable()
    await expect(page.get_by_role("group", name="Flow canvas").locator("[data-block]")).to_have_count(1)
    await studio.shot("viewer-builder")
    await page.get_by_role("link", name="Trash").click()
    await expect(page.get_by_role("table", name="Tools in the trash")).to_contain_text("Gone")
    await expect(page.get_by_role("button", name="Restore Gone")).to_have_count(0)
    await expect(page.get_by_role("button", name="Delete Gone permanently")).to_have_count(0)
    await page.get_by_role("link", name="Servers").click()
    await expect(page.get_by_role("table", name="Integration servers")).to_contain_text("Shop")
    await expect(page.get_by_role("button", name="Create server")).to_have_count(0)
    await page.goto(f"{studio.url}#/servers/{server['id']}")
    await expect(page.get_by_role("heading", name="Shop")).to_be_visible()
    await expect(page.get_by_role("button", name="Import")).to_have_count(0)
    await page.get_by_role("link", name="Executions").click()
    await expect(page.get_by_text("No executions in flight.")).to_be_visible()
    await page.get_by_role("link", name="Live debug").click()
    await page.get_by_label("Contact id").fill("5511")
    await page.get_by_role("button", name="Open").click()
    await expect(page.get_by_text("Debug is off for this contact.")).to_be_visible()
    await expect(page.get_by_label("Debug on for this contact")).to_have_count(0)


async def test_a_revoked_key_ends_the_session(studio: Studio) -> None:
    key_id, token = await create_api_key(studio.harness.client, studio.harness.keys,
                                         workspace="w1", role="editor", name="soon revoked")
    page = studio.page
    await studio.sign_in(token)
    # The list's own request must not race the revocation (it would end the session first).
    await expect(page.get_by_role("heading", name="Tools")).to_be_visible()
    await revoke_api_key(studio.harness.client, studio.harness.keys, key_id)
    await page.get_by_role("link", name="Trash").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("session ended")
    assert await page.evaluate("sessionStorage.getItem('chatflow.studio.key')") is None


async def test_the_studio_is_usable_with_the_keyboard_alone(studio: Studio) -> None:
    page = studio.page
    await studio.ok("POST", "/tools", 201, json={"id": "t-keys", "name": "Keyboard"})
    await page.goto(studio.url)
    await expect(page.get_by_label("API key")).to_be_focused()
    await page.keyboard.type(studio.admin_key)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Tools")).to_be_visible()

    async def tab_to(name: str) -> None:
        for _ in range(120):  # the builder has a control per field; Tab wraps round to the nav
            await page.keyboard.press("Tab")
            focused = await page.evaluate("document.activeElement.textContent.trim()")
            if focused == name:
                return
        raise AssertionError(f"Tab never reached {name!r}")

    await tab_to("Keyboard")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Keyboard")).to_be_visible()
    await tab_to("Trash")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    await tab_to("Sign out")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


async def test_every_studio_file_and_route_carries_the_policy_and_nosniff(studio: Studio) -> None:
    from chatflow.handlers.studio.app import STATIC, STUDIO_CSP

    files = [f"/studio/{p.relative_to(STATIC).as_posix()}" for p in STATIC.rglob("*") if p.is_file()]
    assert "/studio/js/builder/store.js" in files
    # The routes of their own (config.json above all: the page reads it first), a miss, the redirect.
    for path in [*files, "/studio/", "/studio/config.json", "/favicon.ico", "/studio", "/studio/no-such.js"]:
        response = await studio.http.get(f"{studio.base}{path}", follow_redirects=False)
        assert response.status_code in (200, 308, 404), (path, response.status_code)
        assert response.headers.get("content-security-policy") == STUDIO_CSP, path
        assert response.headers.get("x-content-type-options") == "nosniff", path

"""The Studio's shell in a real browser: sign-in, navigation, sign-out, CSP, offline docs."""

from __future__ import annotations

from playwright.async_api import expect

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

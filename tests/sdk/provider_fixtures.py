"""Fixtures that wire the fake providers in through the environment (tests/sdk, tests/bridge)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sdk.fakes import FAKE_KEY, FAKES, ProviderFake, start_fake

_PROVIDER_VARIABLES = (
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
    "GEMINI_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
)  # fmt: skip


@pytest.fixture(autouse=True)
def no_real_provider_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's real keys or endpoints."""
    for variable in _PROVIDER_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def serve_fake(family: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderFake]:
    fake = start_fake(family)
    monkeypatch.setenv(fake.key_variable, FAKE_KEY)
    monkeypatch.setenv(fake.base_variable, fake.base_url)
    try:
        yield fake
    finally:
        fake.server.stop()
    assert not fake.server.failures, fake.server.failures


@pytest.fixture(params=sorted(FAKES))
def fake_provider(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ProviderFake]:
    """Each of the three fake providers in turn, wired in through the environment."""
    yield from serve_fake(request.param, monkeypatch)

"""Fixtures for the bridge tests: the fake providers of tests/sdk, wired in through the environment."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "sdk"))

from fakes import FAKE_KEY, FAKES, ProviderFake, start_fake

_PROVIDER_VARIABLES = (
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
    "GEMINI_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
)  # fmt: skip


@pytest.fixture(autouse=True)
def no_real_provider_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in _PROVIDER_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(params=sorted(FAKES))
def fake_provider(request: pytest.FixtureRequest,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderFake]:
    """Each of the three fake providers in turn."""
    fake = start_fake(request.param)
    monkeypatch.setenv(fake.key_variable, FAKE_KEY)
    monkeypatch.setenv(fake.base_variable, fake.base_url)
    try:
        yield fake
    finally:
        fake.server.stop()
    assert not fake.server.failures, fake.server.failures

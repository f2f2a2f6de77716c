from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sdk.fakes import ProviderFake
from tests.sdk.provider_fixtures import fake_provider, no_real_provider_settings, serve_fake

__all__ = ["fake_provider", "no_real_provider_settings"]


@pytest.fixture
def gemini_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderFake]:
    yield from serve_fake("gemini", monkeypatch)


@pytest.fixture
def openai_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderFake]:
    yield from serve_fake("openai", monkeypatch)


@pytest.fixture
def anthropic_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderFake]:
    yield from serve_fake("anthropic", monkeypatch)

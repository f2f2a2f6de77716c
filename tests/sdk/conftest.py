from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes import ProviderFake
from provider_fixtures import fake_provider, no_real_provider_settings, serve_fake

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

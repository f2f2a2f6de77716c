"""Fixtures for the bridge tests: the fake providers of tests/sdk, wired in through the environment."""

from __future__ import annotations

from tests.sdk.provider_fixtures import fake_provider, no_real_provider_settings

__all__ = ["fake_provider", "no_real_provider_settings"]

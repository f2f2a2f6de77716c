"""CHATFLOW_ORIGIN_LIMITS is read when a worker starts (``Settings.check``): an entry that
is not an http(s) origin stops it there, naming the entry."""

from __future__ import annotations

import json

import pytest

from chatflow.handlers.settings import Settings
from chatflow.runtime.errors import ConfigurationError

LIMITS = {"requestsPerSecond": 5}


@pytest.mark.parametrize("written", ["ftp://x", "ws://host:80", "x", "https://"])
def test_an_entry_that_is_not_an_http_origin_is_refused_naming_it(written: str) -> None:
    settings = Settings(origin_limits=json.dumps({"https://ok.example": LIMITS,
                                                  written: LIMITS}))
    with pytest.raises(ConfigurationError) as refused:
        settings.check()
    assert str(refused.value) == (f"CHATFLOW_ORIGIN_LIMITS: {written!r} is not an http(s) "
                                  "origin (https://host[:port])")


def test_http_and_https_origins_are_read_with_their_ports_spelled_out() -> None:
    settings = Settings(origin_limits=json.dumps({"http://a.example": LIMITS,
                                                  "HTTPS://B.example:8443": LIMITS}))
    settings.check()
    assert sorted(settings.origins()) == ["http://a.example:80", "https://b.example:8443"]

"""What counts as the same origin for a stored secret (scheme, host and port; path ignored)."""

from __future__ import annotations

import pytest

from chatflow.runtime.origins import misplaced_secrets, origin_of


@pytest.mark.parametrize(("url", "origin"), [
    ("https://API.Shop.example/v1", "https://api.shop.example:443"),
    ("https://api.shop.example:443/other?x=1", "https://api.shop.example:443"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("http://[::1]:81/x", "http://[::1]:81"),
    ("http://user:pw@host/x", "http://host:80"),
    ("not a url", ""),
    ("http://host:port/", ""),
    ("http://good.example\t.evil.example/", ""),
    ("http://evil.example\\@good.example/", ""),  # yarl refuses it, so aiohttp sends nothing
])
def test_an_origin_is_scheme_host_and_port_with_the_default_port_spelled_out(
        url: str, origin: str) -> None:
    assert origin_of(url) == origin


def test_a_secret_is_misplaced_on_another_scheme_host_or_port_but_not_another_path() -> None:
    bound = {"Authorization": "https://api.shop.example:443"}
    assert misplaced_secrets("https://api.shop.example/v2/orders", bound) == []
    for elsewhere in ("http://api.shop.example/", "https://api.shop.example:8443/",
                      "https://evil.example/", "https://api.shop.example.evil.example/"):
        assert misplaced_secrets(elsewhere, bound) == ["Authorization"]

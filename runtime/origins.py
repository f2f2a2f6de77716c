"""Origins (scheme://host:port) and the rule that binds a stored secret to one (no I/O).

A secret header of an integration server or endpoint, and the apiKey of an LLM credential,
is saved with the origin of the URL it was saved for. The registry clears it when that URL
moves to another origin; the runtime refuses to send it anywhere else (second line of
defence), and ``Outbound.send`` (runtime/outbound.py) drops it on a redirect that leaves the origin.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """``scheme://host:port`` with the default port spelled out; ``""`` for no usable URL.

    Parsed by httpx, the client that sends the request: the same parser decides where a
    secret may go and where it goes, so no URL can read as one host here and another there.
    """
    try:
        parts = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return ""
    scheme = parts.scheme.lower()
    host = parts.host.lower()
    if not scheme or not host:
        return ""
    port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def misplaced_secrets(url: str, secret_origins: Mapping[str, str]) -> list[str]:
    """The names of secrets bound to an origin other than ``url``'s, sorted."""
    target = origin_of(url)
    return sorted(name for name, origin in secret_origins.items() if origin != target)

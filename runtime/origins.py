"""Origins (scheme://host:port) and the rule that binds a stored secret to one (no I/O).

A secret header of an integration server or endpoint, and the apiKey of an LLM credential,
is saved with the origin of the URL it was saved for. The registry clears it when that URL
moves to another origin; the runtime refuses to send it anywhere else (second line of
defence), and ``Outbound.send`` (runtime/outbound.py) drops it on a redirect that leaves the origin.
"""

from __future__ import annotations

from collections.abc import Mapping

from yarl import URL

_DEFAULT_PORTS = {"http": 80, "https": 443}
# yarl, like a browser, silently drops tabs and newlines inside a URL; httpx refused them. A
# URL whose host only appears once they are dropped is refused, as before.
_CONTROL = frozenset(chr(c) for c in (*range(0x21), 0x7F))


def parse_url(url: str) -> URL:
    """The URL as Outbound sends it; ValueError for one with whitespace or control characters."""
    if not isinstance(url, str) or any(c in _CONTROL for c in url):
        raise ValueError("a URL may not contain spaces or control characters")
    # An ASCII URL is sent as written: interpolation already percent-encoded each variable
    # for where it stands (``..%2Fadmin%3Fx%3D1``), and yarl's requoting would decode some
    # of it again (``%3D`` -> ``=``). Only a URL with other characters (an IDN host, a raw
    # accented path) is left to yarl to encode.
    return URL(url, encoded=url.isascii())


def origin_of(url: str) -> str:
    """``scheme://host:port`` with the default port spelled out; ``""`` for no usable URL.

    Parsed by yarl, the parser of aiohttp, the client that sends the request (Outbound): the
    same parser decides where a secret may go and where it goes, so no URL can read as one host
    here and another there.
    """
    try:
        parts = parse_url(url)
        scheme = parts.scheme.lower()
        host = (parts.host or "").lower()
        port = parts.explicit_port or _DEFAULT_PORTS.get(scheme, 0)
    except (ValueError, TypeError):
        return ""
    if not scheme or not host:
        return ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def misplaced_secrets(url: str, secret_origins: Mapping[str, str]) -> list[str]:
    """The names of secrets bound to an origin other than ``url``'s, sorted."""
    target = origin_of(url)
    return sorted(name for name, origin in secret_origins.items() if origin != target)

"""Which stored secrets survive a change of origin (no I/O).

A secret header is kept only while the origin it was saved for is the origin its server's
baseUrl points to now; the others are cleared, not re-bound, so moving a server to another
host never carries its secrets along (``docs/security.md``, "Secrets bound to their origin").
"""

from __future__ import annotations

import copy

from .state import Record


def header_origin(header: Record, fallback: str) -> str:
    """The origin a stored secret header was saved for; records written before secrets
    carried one are bound to the origin their server had until now (``fallback``)."""
    return str(header.get("origin") or fallback)


def keep_bound(headers: list[Record], origin: str, fallback: str) -> tuple[list[Record], list[str]]:
    """``headers`` without the secrets bound to another origin than ``origin``, and the
    names of those cleared."""
    kept: list[Record] = []
    cleared: list[str] = []
    for header in headers:
        if header.get("secret") and header_origin(header, fallback) != origin:
            cleared.append(str(header["name"]))
        else:
            kept.append(header)
    return kept, cleared


def rebind_endpoints(endpoints: dict[str, Record], origin: str,
                     fallback: str) -> tuple[dict[str, Record] | None, list[str]]:
    """The server's endpoints with their secrets for another origin cleared, or ``None``
    when none had one; plus the cleared paths ``endpoints.{id}.headers.{name}``."""
    out: dict[str, Record] = {}
    cleared: list[str] = []
    for endpoint_id, endpoint in endpoints.items():
        kept, gone = keep_bound(endpoint.get("headers") or [], origin, fallback)
        out[endpoint_id] = {**copy.deepcopy(endpoint), "headers": copy.deepcopy(kept)}
        cleared += [f"endpoints.{endpoint_id}.headers.{name}" for name in gone]
    return (out if cleared else None), cleared

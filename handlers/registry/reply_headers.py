"""The response headers an endpoint test returns: bounded, and with every secret masked.

A test call is made with the server's decrypted secret headers, and what it answers goes back to
whoever pressed *Test* (any editor of the workspace). Headers that carry credentials by name
(``Set-Cookie``, ``Authorization``, ``X-Api-Key``, ...) are masked, and so is any header whose
value contains one of the server's own secret values (an upstream that echoes the credential
it was sent). The list is capped, so an upstream that answers thousands of headers cannot
grow the reply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from chatflow.runtime.masking import is_secret_name
from chatflow.runtime.registry.views import MASK

MAX_HEADERS = 64
MAX_VALUE_CHARS = 1024
# Response headers that carry a session by name, beyond the policy's credential names.
_SESSION = re.compile(r"session", re.IGNORECASE)


def secret_values(config: Mapping[str, object], endpoint_id: str) -> list[str]:
    """The values of the headers marked secret on the server and on the endpoint."""
    layers: list[object] = [config]
    endpoints = config.get("endpoints")
    if isinstance(endpoints, Mapping):
        layers.append(endpoints.get(endpoint_id))
    out: list[str] = []
    for layer in layers:
        if not isinstance(layer, Mapping):
            continue
        headers, secrets = layer.get("headers"), layer.get("secretHeaders")
        if isinstance(headers, Mapping) and isinstance(secrets, Mapping):
            out += [str(v) for k, v in headers.items() if k in secrets and str(v)]
    return out


def shown_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]],
                  secrets: Iterable[str] = ()) -> list[dict[str, str]]:
    """``[{"name", "value"}]`` in the order received (a repeated header stays repeated)."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    known = [s for s in secrets if len(s) >= 4]  # a 1-3 char "secret" would mask at random
    out: list[dict[str, str]] = []
    for name, value in pairs:
        if len(out) == MAX_HEADERS:
            out.append({"name": "…", "value": f"more headers not shown (first {MAX_HEADERS})"})
            break
        if is_secret_name(name) or _SESSION.search(name) or any(s in value for s in known):
            value = MASK
        elif len(value) > MAX_VALUE_CHARS:
            value = value[:MAX_VALUE_CHARS] + "…"
        out.append({"name": name, "value": value})
    return out

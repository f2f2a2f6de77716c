"""Building an integration endpoint's request (no I/O).

``IntegrationServerCacheConfig`` (the value of ``integration:server:{serverId}``)::

    {"id", "name", "baseUrl", "headers": {name: value}, "secretHeaders": {name: origin},
     "endpoints": {epId: {"id", "name", "path", "method", "headers": {name: value},
                          "secretHeaders": {name: origin},
                          "bodyTemplate": <JSON or null>, "params": [{"name", "in", ...}]}}}

``secretHeaders`` names the headers marked secret and the origin each was saved for
(``runtime/origins.py``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

BODYLESS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class EndpointRequest:
    method: str
    url: str
    headers: dict[str, str]
    content: str | None
    # secret header name -> the origin it was saved for
    secret_origins: dict[str, str] = field(default_factory=dict)


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def build_endpoint_url(base_url: str, path: str, route: dict[str, Any],
                       query: dict[str, Any]) -> str:
    """``baseUrl + path``, ``{name}`` segments replaced (URL-encoded), query params appended."""
    for name, value in route.items():
        path = path.replace("{" + name + "}", quote(as_text(value), safe=""))
    url = base_url.rstrip("/") + ("/" + path.lstrip("/") if path else "")
    if not query:
        return url
    parts = urlsplit(url)
    extra = urlencode([(k, as_text(v)) for k, v in query.items()])
    return urlunsplit(parts._replace(query=f"{parts.query}&{extra}" if parts.query else extra))


def _template(template: Any) -> Any:
    if isinstance(template, str):
        if not template.strip():
            return None
        try:
            return json.loads(template)
        except ValueError:
            return template
    return copy.deepcopy(template)


def build_endpoint_body(template: Any, params: dict[str, Any]) -> Any:
    """The endpoint's bodyTemplate with body params laid over it (``a.b`` sets a nested key).

    No template and no body params: ``None`` (no body). A template that is not a
    JSON object is sent as is and body params cannot merge into it.
    """
    body = _template(template)
    if not params:
        return body
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise ValueError("bodyTemplate is not a JSON object, so body params cannot be merged")
    for name, value in params.items():
        target = body
        *parents, leaf = name.split(".")
        for part in parents:
            nxt = target.get(part)
            if not isinstance(nxt, dict):
                nxt = target[part] = {}
            target = nxt
        target[leaf] = value
    return body


def merge_headers(*layers: dict[str, str]) -> dict[str, str]:
    """Later layers win, names compared case-insensitively (server, then endpoint)."""
    out: dict[str, str] = {}
    for layer in layers:
        for name, value in layer.items():
            for existing in [k for k in out if k.lower() == name.lower()]:
                del out[existing]
            out[name] = value
    return out


def secret_origins(*layers: dict[str, Any]) -> dict[str, str]:
    """Which of the merged headers are secret, and their origins: a later layer's header of
    the same name (case-insensitive) replaces the earlier one, secret or not."""
    out: dict[str, str] = {}
    for layer in layers:
        secrets = layer.get("secretHeaders") or {}
        for name in layer.get("headers") or {}:
            for existing in [k for k in out if k.lower() == name.lower()]:
                del out[existing]
            if name in secrets:
                out[name] = str(secrets[name])
    return out


def prepare_request(server: dict[str, Any], endpoint: dict[str, Any],
                    params: list[tuple[str, str, Any]]) -> EndpointRequest:
    """The request for ``endpoint`` with ``(name, in, value)`` params already interpolated."""
    route = {n: v for n, where, v in params if where == "route"}
    query = {n: v for n, where, v in params if where == "query"}
    body_params = {n: v for n, where, v in params if where == "body"}
    method = str(endpoint.get("method") or "GET").upper()
    url = build_endpoint_url(str(server.get("baseUrl") or ""), str(endpoint.get("path") or ""),
                             route, query)
    headers = merge_headers(server.get("headers") or {}, endpoint.get("headers") or {})
    body = build_endpoint_body(endpoint.get("bodyTemplate"), body_params)
    content: str | None = None
    if body is not None and not (method in BODYLESS and not body_params):
        content = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        if not any(k.lower() == "content-type" for k in headers) and not isinstance(body, str):
            headers["Content-Type"] = "application/json"
    return EndpointRequest(method, url, headers, content, secret_origins(server, endpoint))

"""What the projections hold, computed from the state (no I/O).

* ``tool:{publishedToolId}``: :func:`published_record` (SPEC), only while the tool
  is published and not in the trash.
* ``integration:server:{serverId}``: :func:`server_cache`, secret headers decrypted.
* ``llm:credential:{id}``: :func:`credential_cache`, the apiKey decrypted.
* ``ai-agent:{agentId}``: :func:`agent_cache`, the agent's tools not in the trash.
* the API's lists: :func:`tool_view`, :func:`server_view`, :func:`credential_view`,
  where every secret is masked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatflow.schemas.llm import OPENAI_BASE_URL

from ..origins import origin_of
from .records import record_of
from .state import Record, RegistryState, workspace_of

MASK = "••••••••"
Decrypt = Callable[[str], str]


def tool_status(tool: Record) -> str:
    published = tool.get("publishedTool")
    if tool.get("kind") == "native":
        return "native"
    if not published:
        return "draft"
    return "published" if published["definition"] == tool.get("definition") else "modified"


def tool_view(tool: Record) -> Record:
    definition = tool.get("definition") or {}
    published = tool.get("publishedTool")
    return {
        "id": tool["id"], "workspace": workspace_of(tool),
        "name": tool.get("name", ""), "description": tool.get("description"),
        "kind": tool.get("kind", "custom"), "nativeName": tool.get("nativeName"),
        "definition": tool.get("definition"), "version": tool["version"],
        "status": tool_status(tool),
        "enabledForAI": bool(definition.get("enabledForAI")), "slug": definition.get("slug"),
        "publishedToolId": published["id"] if published else None,
        "publishedVersion": published.get("version") if published else None,
        "publishedTool": published,
        "createdAt": tool.get("createdAt"), "updatedAt": tool.get("updatedAt"),
        "deletedAt": tool.get("deletedAt"),
    }


def published_record(tool: Record) -> Record | None:
    published = tool.get("publishedTool")
    if not published or tool.get("deletedAt") or tool.get("kind") == "native":
        return None
    return record_of(published["id"], tool["id"], published.get("name", ""),
                     published["definition"], workspace_of(tool))


def _masked_headers(headers: list[Record]) -> list[Record]:
    """Secret values masked; the origin a secret is bound to is bookkeeping, not shown."""
    return [{"name": h["name"], "value": MASK if h.get("secret") else h["value"],
             "secret": bool(h.get("secret"))} for h in headers]


def _plain_headers(headers: list[Record], decrypt: Decrypt) -> dict[str, str]:
    return {h["name"]: decrypt(h["value"]) if h.get("secret") else h["value"] for h in headers}


def _secret_origins(headers: list[Record], fallback: str) -> dict[str, str]:
    """Secret header name -> the origin it was saved for. Records written before secrets
    carried an origin are bound to the server's baseUrl as it is now (``fallback``)."""
    return {h["name"]: str(h.get("origin") or fallback) for h in headers if h.get("secret")}


def endpoint_view(endpoint: Record) -> Record:
    return {**endpoint, "headers": _masked_headers(endpoint.get("headers") or [])}


def server_view(server: Record, used_by: list[Record] | None = None) -> Record:
    endpoints = [endpoint_view(e) for e in server.get("endpoints", {}).values()]
    view = {k: v for k, v in server.items() if k != "endpoints"}
    view["headers"] = _masked_headers(server.get("headers") or [])
    view["endpoints"] = endpoints
    users = used_by or []
    view["usedBy"] = [{"toolId": t["id"], "name": t.get("name", "")} for t in users]
    view["metrics"] = {"endpoints": len(endpoints), "usedBy": len(users)}
    return view


def server_cache(server: Record, decrypt: Decrypt) -> Record:
    """IntegrationServerCacheConfig: everything the runtime needs to call an endpoint."""
    origin = origin_of(str(server.get("baseUrl") or ""))
    return {
        "id": server["id"], "workspace": workspace_of(server), "name": server.get("name", ""),
        "baseUrl": server.get("baseUrl", ""),
        "headers": _plain_headers(server.get("headers") or [], decrypt),
        "secretHeaders": _secret_origins(server.get("headers") or [], origin),
        # The extensions the runtime reads (runtime/edge.py): only those set, so a server
        # without them has the cache it had before.
        **{k: server[k] for k in ("retry", "limits", "circuitBreaker") if server.get(k)},
        **({"idempotencyHeader": server["idempotencyHeader"]}
           if "idempotencyHeader" in server else {}),
        "endpoints": {
            e["id"]: {"id": e["id"], "name": e.get("name", ""), "path": e.get("path", ""),
                      "method": e.get("method", "GET"),
                      "headers": _plain_headers(e.get("headers") or [], decrypt),
                      "secretHeaders": _secret_origins(e.get("headers") or [], origin),
                      "bodyTemplate": e.get("bodyTemplate"), "params": e.get("params") or []}
            for e in server.get("endpoints", {}).values()
        },
    }


def credential_origin(base_url: str | None) -> str:
    """The origin a credential's apiKey is sent to: its baseUrl's, else OpenAI's."""
    return origin_of(base_url or OPENAI_BASE_URL)


def credential_view(cred: Record) -> Record:
    """``apiKey`` masked, or ``null`` once cleared (its baseUrl moved to another origin)."""
    view = {k: v for k, v in cred.items() if k != "apiKeyOrigin"}
    return {**view, "apiKey": MASK if cred.get("apiKey") else None}


def credential_cache(cred: Record, decrypt: Decrypt) -> Record:
    return {"id": cred["id"], "workspace": workspace_of(cred), "name": cred.get("name", ""),
            "provider": cred.get("provider", "openai"), "baseUrl": cred.get("baseUrl"),
            "apiKey": decrypt(cred["apiKey"]) if cred.get("apiKey") else "",
            "apiKeyOrigin": cred.get("apiKeyOrigin") or credential_origin(cred.get("baseUrl"))}


def agent_cache(state: RegistryState, agent_id: str) -> Record | None:
    """The agent's tools, trash filtered out: what an agent's cache entry lists."""
    tool_ids = state.agents.get(agent_id)
    if not tool_ids:
        return None
    tools: list[Record] = []
    for tool_id in tool_ids:
        tool = state.tools.get(tool_id)
        if tool is None or tool.get("deletedAt"):
            continue
        tools.append(agent_tool(tool))
    return {"id": agent_id, "tools": tools}


def agent_tool(tool: Record) -> Record:
    if tool.get("kind") == "native":
        return {"toolId": tool["id"], "kind": "native", "nativeName": tool.get("nativeName"),
                "name": tool.get("name", ""), "description": tool.get("description") or ""}
    published = tool.get("publishedTool") or {}
    definition: dict[str, Any] = published.get("definition") or {}
    return {"toolId": tool["id"], "kind": "custom", "publishedToolId": published.get("id"),
            "name": tool.get("name", ""), "enabledForAI": bool(definition.get("enabledForAI")),
            "slug": definition.get("slug"),
            "description": function_description(tool.get("description"), definition),
            "inputs": definition.get("inputs") or []}


def function_description(tool_description: str | None, definition: Record) -> str:
    """A tool's description for a model: definition.description, else Tool.description, plus
    returnDescription (one fallback, docs/agents.md)."""
    text = definition.get("description") or tool_description or ""
    if definition.get("returnDescription"):
        text = f"{text} {definition['returnDescription']}".strip()
    return str(text)

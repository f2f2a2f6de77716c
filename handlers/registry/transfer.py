"""``chatflow export``: a workspace's tools, servers and credentials as diff-friendly files.

One JSON file per object (``tools/<id>.json``, ``servers/<id>.json``,
``credentials/<id>.json``), keys sorted, two-space indent, a final newline, so a change to
one tool is a small diff in one file. A tool's file holds its draft (``definition``), its
canvas positions apart (``positions``: moving a block is not a change of what it does), the
published definition when it differs from the draft, and its saved test cases. A server's
file holds every field its record has (fields added later included) and its endpoints;
every secret is written as ``{"secret": "CHATFLOW_SECRET_<...>"}``, a placeholder that
``chatflow import`` fills from the environment: values never leave the registry. What
is bookkeeping of this deployment (versions, times, the origin a secret is bound to) is
left out. Tools in the trash are not exported.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from chatflow.runtime.registry import RegistryState, workspace_of
from chatflow.runtime.registry.state import Record

BOOKKEEPING = {"version", "createdAt", "updatedAt", "workspace", "deletedAt"}
CASE_BOOKKEEPING = {"version", "createdAt", "updatedAt", "createdBy", "toolId"}
KINDS = ("tools", "servers", "credentials")


def placeholder(*parts: str) -> str:
    """``CHATFLOW_SECRET_<PARTS>``: upper case, every run of other characters one ``_``."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", "_".join(parts)).strip("_").upper()
    return f"CHATFLOW_SECRET_{name}"


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def split_positions(definition: Any) -> tuple[Any, dict[str, Any]]:
    """The definition without ``meta.positions``, and the positions."""
    if not isinstance(definition, dict) or not isinstance(definition.get("meta"), dict):
        return definition, {}
    out = copy.deepcopy(definition)
    positions = out["meta"].pop("positions", None) or {}
    if not out["meta"]:
        out.pop("meta")
    return out, positions


def join_positions(definition: Any, positions: dict[str, Any]) -> Any:
    """The inverse of :func:`split_positions`."""
    if not positions or not isinstance(definition, dict):
        return definition
    out = copy.deepcopy(definition)
    out["meta"] = {**(out.get("meta") or {}), "positions": positions}
    return out


def case_file(case: Record) -> Record:
    return {k: v for k, v in case.items() if k not in CASE_BOOKKEEPING}


def tool_file(state: RegistryState, tool: Record) -> Record:
    definition, positions = split_positions(tool.get("definition"))
    published = tool.get("publishedTool") or {}
    out: Record = {"id": tool["id"], "name": tool.get("name", ""),
                   "description": tool.get("description"), "kind": tool.get("kind", "custom"),
                   "definition": definition, "positions": positions,
                   "publishedToolId": published.get("id"), "published": bool(published),
                   "tests": [case_file(c) for c in
                             sorted(state.cases.get(tool["id"], {}).values(),
                                    key=lambda c: c["id"])]}
    if tool.get("nativeName"):
        out["nativeName"] = tool["nativeName"]
    if published and published.get("definition") != tool.get("definition"):
        out["publishedDefinition"] = split_positions(published["definition"])[0]
        out["publishedPositions"] = split_positions(published["definition"])[1]
    return out


def _headers(headers: list[Record], *where: str) -> list[Record]:
    out = []
    for header in headers:
        item = {k: v for k, v in header.items() if k != "origin"}
        if header.get("secret"):
            item["value"] = {"secret": placeholder(*where, str(header.get("name")))}
        out.append(item)
    return out


def server_file(server: Record) -> Record:
    """Every field of the record but bookkeeping; secrets as placeholders."""
    out = {k: copy.deepcopy(v) for k, v in server.items()
           if k not in BOOKKEEPING and k != "endpoints"}
    out["headers"] = _headers(server.get("headers") or [], server["id"])
    endpoints = []
    for endpoint in sorted((server.get("endpoints") or {}).values(), key=lambda e: e["id"]):
        item = {k: copy.deepcopy(v) for k, v in endpoint.items()
                if k not in BOOKKEEPING and k != "serverId"}
        item["headers"] = _headers(endpoint.get("headers") or [], server["id"], endpoint["id"])
        endpoints.append(item)
    out["endpoints"] = endpoints
    return out


def credential_file(cred: Record) -> Record:
    out = {k: copy.deepcopy(v) for k, v in cred.items()
           if k not in BOOKKEEPING and k != "apiKeyOrigin"}
    out["apiKey"] = {"secret": placeholder(cred["id"], "apiKey")} if cred.get("apiKey") else None
    return out


def export_files(state: RegistryState, workspace: str) -> dict[str, str]:
    """``{relative path: text}`` of every file of ``workspace``."""
    files: dict[str, str] = {}
    for tool in state.tools.values():
        if workspace_of(tool) == workspace and not tool.get("deletedAt"):
            files[f"tools/{_name(tool['id'])}.json"] = dumps(tool_file(state, tool))
    for server in state.servers.values():
        if workspace_of(server) == workspace:
            files[f"servers/{_name(server['id'])}.json"] = dumps(server_file(server))
    for cred in state.credentials.values():
        if workspace_of(cred) == workspace:
            files[f"credentials/{_name(cred['id'])}.json"] = dumps(credential_file(cred))
    return dict(sorted(files.items()))


def _name(ident: str) -> str:
    """A file name for an id: ids are free text; anything but ``[A-Za-z0-9._-]`` is escaped
    (the id itself is inside the file)."""
    return re.sub(r"[^A-Za-z0-9._-]", lambda m: f"%{ord(m.group()):02X}", ident).lstrip(".")


def write_export(root: Path, files: dict[str, str]) -> list[str]:
    """Write ``files`` under ``root``; a file this export no longer has (an object removed
    since the last export into the same folder) is deleted, so the folder mirrors the
    workspace. Returns the paths written."""
    for kind in KINDS:
        folder = root / kind
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            if f"{kind}/{old.name}" not in files:
                old.unlink()
    for path, text in files.items():
        target = root / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    return list(files)

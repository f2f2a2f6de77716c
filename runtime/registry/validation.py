"""Publish-time checks that need the registry, every problem with its JSON path.

The definition's own shape and targets come from :mod:`runtime.validation`;
this adds: callTool targets exist, are published and not in the trash; no cycle
of tools however long; callAI credentials and callEndpoint servers exist. Every
reference must name an object of the tool's own workspace: another workspace's
object is reported exactly as a missing one.
"""

from __future__ import annotations

from typing import Any

from chatflow.runtime.validation import parse_definition
from chatflow.schemas.definition import CallAIBlock, CallEndpointBlock, CallToolBlock, ToolDefinition

from .state import DEFAULT_WORKSPACE, Record, RegistryState, workspace_of


def check_publish(state: RegistryState, tool_id: str) -> list[str]:
    """Problems that stop ``tool_id``'s draft from being published (empty: publishable)."""
    tool = state.tools[tool_id]
    if tool.get("kind") == "native":
        return ["kind: a native tool is never publishable"]
    if tool.get("definition") is None:
        return ["definition: the tool has no definition yet (save a draft first)"]
    return check_draft(state, tool_id, tool["definition"], workspace_of(tool))


def check_draft(state: RegistryState, tool_id: str, raw: Any,
                workspace: str = DEFAULT_WORKSPACE) -> list[str]:
    """Problems that would stop ``raw`` from being published as ``tool_id``'s definition,
    before it is saved (the tool may not exist yet)."""
    definition, problems = parse_definition(raw)
    problems = [f"definition.{p}" for p in problems]
    if definition is None:
        return problems
    problems += check_references(state, definition, workspace)
    problems += check_cycles(state, tool_id, definition)
    return problems


def check_references(state: RegistryState, definition: ToolDefinition,
                     workspace: str = DEFAULT_WORKSPACE) -> list[str]:
    problems: list[str] = []
    for key, block in definition.blocks.items():
        path = f"definition.blocks.{key}"
        if isinstance(block, CallToolBlock):
            problems += _check_call_tool(state, path, block, workspace)
        elif (isinstance(block, CallAIBlock)
              and state.credential_in(block.llmCredentialId, workspace) is None):
            problems.append(f"{path}.llmCredentialId: no LLM credential {block.llmCredentialId!r}")
        elif isinstance(block, CallEndpointBlock):
            server = state.server_in(block.serverId, workspace)
            if server is None:
                problems.append(f"{path}.serverId: no integration server {block.serverId!r}")
            elif block.endpointId not in server["endpoints"]:
                problems.append(f"{path}.endpointId: no endpoint {block.endpointId!r} "
                                f"on server {block.serverId!r}")
    return problems


def _check_call_tool(state: RegistryState, path: str, block: CallToolBlock,
                     workspace: str) -> list[str]:
    target_id = state.published.get(block.publishedToolId)
    target = state.tool_in(target_id, workspace) if target_id else None
    if target is None:
        if state.tool_in(block.toolId, workspace) is not None:
            return [f"{path}.publishedToolId: tool {block.toolId!r} is not published as "
                    f"{block.publishedToolId!r}"]
        return [f"{path}.publishedToolId: no published tool {block.publishedToolId!r}"]
    problems = []
    if target.get("deletedAt"):
        problems.append(f"{path}.publishedToolId: tool {target['name']!r} ({target['id']}) "
                        "is in the trash")
    if block.toolId != target["id"]:
        problems.append(f"{path}.toolId: {block.toolId!r}, but {block.publishedToolId!r} "
                        f"belongs to tool {target['id']!r}")
    return problems


def call_targets(definition: Any) -> list[tuple[str, str]]:
    """``(blockKey, publishedToolId)`` of every callTool block of a raw definition."""
    blocks = definition.get("blocks") if isinstance(definition, dict) else None
    if not isinstance(blocks, dict):
        return []
    return [(k, b["publishedToolId"]) for k, b in blocks.items()
            if isinstance(b, dict) and b.get("type") == "callTool"
            and isinstance(b.get("publishedToolId"), str)]


def check_cycles(state: RegistryState, tool_id: str, definition: ToolDefinition) -> list[str]:
    """A callTool chain from the new definition back to the tool itself, of any length."""
    raw = definition.model_dump(mode="json", by_alias=True)
    problems = []
    for key, pt in call_targets(raw):
        start = state.published.get(pt)
        if start is None:
            continue
        path = _path_back(state, start, tool_id)
        if path is not None:
            names = [_name(state, tool_id), *(_name(state, t) for t in path)]
            problems.append(f"definition.blocks.{key}.publishedToolId: cycle of tools: "
                            + " → ".join(names))
    return problems


def _path_back(state: RegistryState, start: str, goal: str) -> list[str] | None:
    """Tool ids from ``start`` to ``goal`` over published callTool edges (iterative DFS)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        if node == goal:
            return path
        if node in seen:
            continue
        seen.add(node)
        published: Record = state.tools.get(node, {}).get("publishedTool") or {}
        for _key, pt in call_targets(published.get("definition")):
            nxt = state.published.get(pt)
            if nxt is not None and nxt not in seen:
                stack.append((nxt, [*path, nxt]))
    return None


def _name(state: RegistryState, tool_id: str) -> str:
    tool = state.tools.get(tool_id)
    return f"{tool['name']} ({tool_id})" if tool and tool.get("name") else tool_id

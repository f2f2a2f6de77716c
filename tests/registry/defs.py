"""Small builders of tool definitions for the registry and API tests."""

from __future__ import annotations

from typing import Any

END = {"type": "endAttendance"}


def to(block_id: str) -> dict[str, str]:
    return {"type": "block", "blockId": block_id}


def ret(value: str = "ok", block_id: str = "r") -> dict[str, Any]:
    return {"type": "return", "id": block_id, "value": value}


def call_tool(block_id: str, tool_id: str, pt: str, nxt: str = "r") -> dict[str, Any]:
    return {"type": "callTool", "id": block_id, "toolId": tool_id, "publishedToolId": pt,
            "inputVariables": [], "outputVariable": "child", "defaultOutput": to(nxt)}


def call_ai(block_id: str, credential: str, nxt: str = "r") -> dict[str, Any]:
    return {"type": "callAI", "id": block_id, "llmCredentialId": credential,
            "outputVariable": "text", "capability": "generateText", "model": "gpt-4o-mini",
            "userPrompt": "hi", "defaultOutput": to(nxt)}


def call_endpoint(block_id: str, server: str, endpoint: str, mappings: list[dict[str, str]],
                  nxt: str = "r", **extra: Any) -> dict[str, Any]:
    return {"type": "callEndpoint", "id": block_id, "serverId": server, "endpointId": endpoint,
            "paramMappings": mappings, "responseBodyVariable": "resp",
            "responseStatusVariable": "status", "defaultOutput": to(nxt), **extra}


def definition(*blocks: dict[str, Any], start: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"blocks": {b["id"]: b for b in blocks},
            "onboardingBlockId": start if start is not None else blocks[0]["id"], **extra}


def returning(value: str = "ok") -> dict[str, Any]:
    return definition(ret(value))

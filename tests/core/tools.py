"""Small definition builders for the core tests."""

from __future__ import annotations

from typing import Any


def to(block_id: str) -> dict[str, Any]:
    return {"type": "block", "blockId": block_id}


def ret(block_id: str, value: str) -> dict[str, Any]:
    return {"type": "return", "id": block_id, "value": value}


def script(block_id: str, source: str, out: str, nxt: dict[str, Any], *,
           inputs: dict[str, str] | None = None, conditions: list[dict[str, Any]] | None = None,
           on_error: str = "blocking", error_variable: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "executeScript", "id": block_id, "source": source, "outputVariable": out,
        "inputVariables": [{"name": k, "value": v} for k, v in (inputs or {}).items()],
        "onError": on_error, "outputConditions": conditions or [], "defaultOutput": nxt}
    if error_variable:
        block["errorVariable"] = error_variable
    return block


def http(block_id: str, url: str, nxt: dict[str, Any], *, method: str = "GET",
         on_error: str = "blocking", **extra: Any) -> dict[str, Any]:
    return {"type": "httpCall", "id": block_id, "url": url, "method": method,
            "onError": on_error, "outputConditions": extra.pop("conditions", []),
            "defaultOutput": nxt, **extra}


def call(block_id: str, pt: str, out: str, nxt: dict[str, Any], *,
         inputs: dict[str, str] | None = None, on_error: str = "blocking",
         error_variable: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "callTool", "id": block_id, "toolId": f"t-{pt}", "publishedToolId": pt,
        "inputVariables": [{"name": k, "value": v} for k, v in (inputs or {}).items()],
        "outputVariable": out, "onError": on_error, "outputConditions": [], "defaultOutput": nxt}
    if error_variable:
        block["errorVariable"] = error_variable
    return block


def tool(start: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"onboardingBlockId": start, "blocks": {b["id"]: b for b in blocks}, **extra}


def when(cond_id: str, variable: str, operator: str, value: str | None, target: dict[str, Any],
         logic: str = "and", *more: dict[str, Any]) -> dict[str, Any]:
    rules = [{"variable": variable, "operator": operator, **({"value": value} if value is not None else {})}]
    return {"id": cond_id, "logic": logic, "rules": rules + list(more), "target": target}

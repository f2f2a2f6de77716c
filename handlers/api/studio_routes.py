"""Routes the Studio needs beside the registry's: a tool's seven days per day, the shape
check of a draft definition as it is typed (publish runs the full check), the block schemas
the builder's forms are made from, and the published tools that call a tool."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel

from chatflow.runtime.validation import parse_definition
from chatflow.schemas import definition as schema

from ..projections.metrics import HOUR_MS, to_ms
from ..registry.errors import NotFound, RegistryError
from .auth import Caller
from .authorization import Authorized
from .contract import answers
from .deps import Services, services

router = APIRouter(tags=["studio"])
Svc = Annotated[Services, Depends(services)]
DAY_HOURS = 24


def daily(buckets: dict[bytes, bytes], now_ms: int, days: int = 7) -> list[dict[str, Any]]:
    """Per UTC day, oldest first: runs, mean duration (ms) and success rate, from the
    projection's hourly counters (``<hour>:n``, ``:ok``, ``:ms``)."""
    today = now_ms // HOUR_MS // DAY_HOURS
    first = today - days + 1
    sums = {day: {"n": 0, "ok": 0, "ms": 0} for day in range(first, today + 1)}
    for field, value in buckets.items():
        hour_s, _, kind = field.decode().partition(":")
        if not hour_s.isdecimal() or kind not in ("n", "ok", "ms"):
            continue
        day = int(hour_s) // DAY_HOURS
        if day in sums:
            sums[day][kind] += int(value)
    out = []
    for day, s in sums.items():
        date = datetime.fromtimestamp(day * DAY_HOURS * HOUR_MS / 1000, UTC).date().isoformat()
        runs = s["n"]
        out.append({"day": date, "runs": runs, "avgMs": round(s["ms"] / runs) if runs else 0,
                    "successRate": round(s["ok"] / runs, 4) if runs else 0.0})
    return out


@router.get("/tools/{tool_id}/daily", responses=answers(404),
            summary="A tool's last seven days: runs, avgMs, successRate")
async def tool_daily(svc: Svc, who: Caller, tool_id: str,
                     days: Annotated[int, Query(ge=1, le=30)] = 7) -> dict[str, Any]:
    await svc.registry.catch_up()
    if svc.registry.state.tool_in(tool_id, who.workspace) is None:
        raise NotFound(f"no tool {tool_id!r}")
    buckets = await svc.client.hgetall(svc.keys.proj_buckets(tool_id))
    return {"toolId": tool_id, "days": daily(buckets or {}, to_ms(None), days)}


@router.post("/definitions/check", summary="Check a definition's shape; problems by JSON path")
async def check_definition(_grant: Authorized,
                           definition: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    _parsed, problems = parse_definition(definition)
    body = RegistryError("", problems=[f"definition.{p}" for p in problems]).body()
    return {"ok": not problems, "problems": body.get("problems", [])}


BLOCK_MODELS: dict[str, type[BaseModel]] = {
    "httpCall": schema.HttpCallBlock, "executeScript": schema.ExecuteScriptBlock,
    "callEndpoint": schema.CallEndpointBlock, "callTool": schema.CallToolBlock,
    "fetchMedia": schema.FetchMediaBlock, "callAI": schema.CallAIBlock,
    "return": schema.ReturnBlock,
}
# Fields shown only for some values of another field. callAI's required ones come from the
# validator's own table; the optional ones are those its capability reads.
CALLAI_OPTIONAL = {"transcribeAudio": ("language",), "analyzeImage": ("prompt", "maxTokens"),
                   "analyzeDocument": ("maxTokens",),
                   "generateText": ("systemPrompt", "maxTokens", "outputFormat")}
FETCHMEDIA_MODE = {"whatsapp": ("mediaIdVariable",), "url": ("urlVariable", "authHeader")}


def block_schemas() -> dict[str, Any]:
    """Per block type, the JSON Schema pydantic validates it with, and the fields that depend
    on another field's value (``dependsOn``: field -> value -> fields shown)."""
    callai = {cap: [*req, *CALLAI_OPTIONAL[cap]] for cap, req in schema.CALLAI_REQUIRED.items()}
    depends = {"callAI": {"capability": callai},
               "fetchMedia": {"mode": {m: list(f) for m, f in FETCHMEDIA_MODE.items()}}}
    return {"blocks": {kind: model.model_json_schema(by_alias=True)
                       for kind, model in BLOCK_MODELS.items()},
            "dependsOn": depends,
            "requiredByCapability": {k: list(v) for k, v in schema.CALLAI_REQUIRED.items()}}


@router.get("/definitions/schema", summary="Each block type's JSON Schema (the builder's forms)")
async def definition_schema(_who: Caller) -> dict[str, Any]:
    return block_schemas()


@router.get("/tools/{tool_id}/callers", responses=answers(404),
            summary="Published tools that still call this tool")
async def tool_callers(svc: Svc, who: Caller, tool_id: str) -> dict[str, Any]:
    await svc.registry.catch_up()
    if svc.registry.state.tool_in(tool_id, who.workspace) is None:
        raise NotFound(f"no tool {tool_id!r}")
    callers = svc.registry.state.callers_of(tool_id)
    return {"toolId": tool_id, "callers": [{"id": c["id"], "name": c.get("name", "")}
                                           for c in callers]}

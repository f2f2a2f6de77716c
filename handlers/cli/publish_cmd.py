"""``chatflow publish FILE``: validate a ToolDefinition and write ``tool:{publishedToolId}``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from runtime.blocks.ai_checks import check_ai_blocks, credential_ids
from runtime.errors import ChatflowError
from runtime.validation import parse_definition
from schemas.definition import ToolDefinition

from .common import add_redis_flag, client_for, settings_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("publish", help="validate a tool definition and publish it")
    add_redis_flag(p)
    p.add_argument("file", help="a ToolDefinition JSON, or a {id, toolId, name, definition} JSON")
    p.add_argument("--id", help="publishedToolId (default: the file's id)")
    p.add_argument("--tool-id", help="Tool.id (default: the file's toolId, else the id)")
    p.add_argument("--name", help="the tool's name")
    p.add_argument("--check", action="store_true", help="validate only, publish nothing")
    p.set_defaults(handler=cmd_publish)


def load(path: str) -> tuple[dict[str, Any], list[str]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        return {}, [f"{path}: {exc.strerror}"]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, [f"{path}: not JSON ({exc})"]
    if not isinstance(data, dict):
        return {}, ["<root>: expected a JSON object"]
    return data, []


def cmd_publish(args: argparse.Namespace) -> int:
    data, problems = load(args.file)
    wrapper = data if "definition" in data else {"definition": data}
    definition, found = parse_definition(wrapper.get("definition"))
    if definition is not None:
        found += _ai_problems(args, definition)
    problems += [f"definition.{p}" if "definition" in data else p for p in found]
    pt = str(args.id or wrapper.get("id") or "")
    if not pt:
        problems.append("id: no publishedToolId (give --id or an 'id' in the file)")
    if problems:
        print(f"{args.file}: {len(problems)} problem(s)", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    assert definition is not None
    if args.check:
        print(f"{args.file}: valid")
        return 0
    record = {"id": pt, "toolId": args.tool_id or wrapper.get("toolId") or pt,
              "name": args.name or wrapper.get("name", ""),
              "definition": definition.model_dump(mode="json", by_alias=True, exclude_none=True)}
    asyncio.run(_write(args, pt, json.dumps(record, ensure_ascii=False)))
    print(f"published tool:{pt}")
    return 0


def _ai_problems(args: argparse.Namespace, definition: ToolDefinition) -> list[str]:
    """fetchMedia/callAI checks; callAI credentials (``llm:credential:{id}``) are checked
    only when Redis answers, else a note says they were not."""
    ids = credential_ids(definition)
    existing: set[str] | None = None
    if ids:
        try:
            existing = asyncio.run(_existing_credentials(args, ids))
        except (ChatflowError, RedisError, OSError) as exc:
            print(f"note: LLM credentials not checked ({exc})", file=sys.stderr)
    return check_ai_blocks(definition, lambda c: existing is None or c in existing)


async def _existing_credentials(args: argparse.Namespace, ids: set[str]) -> set[str]:
    client, keys = client_for(settings_from(args))
    try:
        return {c for c in ids if await client.exists(keys.llm_credential(c))}
    finally:
        await client.aclose()


async def _write(args: argparse.Namespace, pt: str, value: str) -> None:
    client, keys = client_for(settings_from(args))
    try:
        await client.set(keys.tool(pt), value)
    finally:
        await client.aclose()

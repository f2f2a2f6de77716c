"""``chatflow publish FILE``: validate a ToolDefinition and publish it through the registry.

The file is checked first (every problem with its JSON path, nothing written); then
:func:`~handlers.registry.publishing.publish_release` creates or updates the tool and
publishes it under the publishedToolId, as ``chatflow up`` does with the examples: the
tool is in the registry's log, ``GET /api/tools`` lists it, a rebuild keeps its key, and
publishing an unchanged file again appends nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatflow.runtime.errors import ChatflowError

from .common import add_redis_flag, client_for, settings_from

if TYPE_CHECKING:  # the rest is imported by the command itself: `chatflow --help` stays fast
    from chatflow.schemas.definition import ToolDefinition

    from ..registry.publishing import ToolRelease

TOOL_ID_MAX = 128  # ToolCreate.id


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("publish", help="validate a tool definition and publish it")
    add_redis_flag(p)
    p.add_argument("file", help="a ToolDefinition JSON, or a {id, toolId, name, definition} JSON; "
                                "or a shipped example by name (greeting, cep_lookup, ...)")
    p.add_argument("--id", help="publishedToolId (default: the file's id)")
    p.add_argument("--tool-id", help="Tool.id (default: the file's toolId, else the id)")
    p.add_argument("--name", help="the tool's name")
    p.add_argument("--check", action="store_true", help="validate only, publish nothing")
    p.set_defaults(handler=cmd_publish)


def shipped_example(path: str) -> bytes | None:
    """The installed example a missing ``path`` names (``greeting``, ``greeting.json``,
    ``examples/greeting.json``), so the README's commands work outside a checkout."""
    from importlib import resources

    name = Path(path).name
    name = name if name.endswith(".json") else f"{name}.json"
    item = resources.files("chatflow.examples").joinpath(name)
    return item.read_bytes() if item.is_file() else None


def load(path: str) -> tuple[dict[str, Any], list[str]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        shipped = shipped_example(path)
        if shipped is None:
            return {}, [f"{path}: {exc.strerror} (nor is it a shipped example: "
                        f"{', '.join(example_names())})"]
        print(f"{path}: not found here; using the shipped example "
              f"{Path(path).name.removesuffix('.json')}", file=sys.stderr)
        data = json.loads(shipped)
    except OSError as exc:
        return {}, [f"{path}: {exc.strerror}"]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, [f"{path}: not JSON ({exc})"]
    if not isinstance(data, dict):
        return {}, ["<root>: expected a JSON object"]
    return data, []


def example_names() -> list[str]:
    from importlib import resources

    return sorted(item.name.removesuffix(".json")
                  for item in resources.files("chatflow.examples").iterdir()
                  if item.name.endswith(".json"))


def cmd_publish(args: argparse.Namespace) -> int:
    from chatflow.runtime.validation import parse_definition

    from ..operations.logging import configure_logging
    from ..registry import Invalid
    from ..registry.publishing import ToolRelease

    data, problems = load(args.file)
    if problems:  # a file that cannot be read says only that: nothing else can be checked
        return _refuse(f"{args.file}: 1 problem(s)", problems)
    wrapped = "definition" in data
    wrapper = data if wrapped else {"definition": data}
    definition, found = parse_definition(wrapper.get("definition"))
    if definition is not None:
        found += _ai_problems(args, definition)
    problems += [f"definition.{p}" if wrapped else p for p in found]
    problems += _field_problems(wrapper)
    pt = str(args.id or wrapper.get("id") or "")
    if not pt:
        problems.append("id: no publishedToolId (give --id or an 'id' in the file)")
    if problems:
        return _refuse(f"{args.file}: {len(problems)} problem(s)", problems)
    assert definition is not None
    if args.check:
        print(f"{args.file}: valid")
        return 0
    tool_id = str(args.tool_id or wrapper.get("toolId") or pt)
    name = args.name or wrapper.get("name")  # none: a new tool is named after its toolId
    release = ToolRelease(pt, tool_id, str(name) if name else None, wrapper["definition"])
    configure_logging()
    try:
        outcome = asyncio.run(_publish(args, release))
    except Invalid as exc:  # the registry's checks: callTool targets, cycles, credentials ...
        return _refuse(f"{args.file}: {exc.message}",
                       [p if wrapped else p.removeprefix("definition.") for p in exc.problems])
    print(DONE[outcome].format(pt=pt, tool=tool_id))
    return 0


DONE = {"created": "created: tool {tool} published as {pt}",
        "updated": "updated: tool {tool} republished as {pt}",
        "unchanged": "unchanged: tool {tool} is already published as {pt}; nothing appended"}


def _field_problems(wrapper: dict[str, Any]) -> list[str]:
    problems = [f"{field}: expected a string" for field in ("id", "toolId", "name")
                if wrapper.get(field) is not None and not isinstance(wrapper[field], str)]
    if len(str(wrapper.get("toolId") or "")) > TOOL_ID_MAX:
        problems.append(f"toolId: longer than {TOOL_ID_MAX} characters")
    return problems


def _refuse(header: str, problems: list[str]) -> int:
    print(header, file=sys.stderr)
    for line in problems:
        print(f"  {line}", file=sys.stderr)
    return 1


async def _publish(args: argparse.Namespace, release: ToolRelease) -> str:
    from ..registry import ApiCode, Conflict, Registry
    from ..registry.crypto import SecretBox
    from ..registry.gate import publish_gated
    from ..registry.inline import InlineRunner
    from ..registry.publishing import publish_release
    from ..registry.testcases import CaseRunner
    from ..registry.tools import ToolOps

    settings = settings_from(args)
    client, keys = client_for(settings)
    http = settings.outbound()
    registry = Registry(client, keys, SecretBox.from_settings(settings))
    inline = InlineRunner(settings, client, keys, http)
    tools = ToolOps(registry)

    async def gated(tool_id: str, version: int, pt: str) -> Any:
        """The tool's saved test cases run on the draft first (docs/registry.md)."""
        return await publish_gated(tools, CaseRunner(registry, inline), tool_id, version=version,
                                   published_id=pt)

    try:
        outcome = await publish_release(tools, release, gated)
    finally:
        await inline.aclose()
        await http.aclose()
        await client.aclose()
    if outcome == "in_trash":
        raise Conflict(f"tool {release.tool_id!r} is in the trash: nothing published (restore "
                       f"it with `chatflow tools restore {release.tool_id}`)", code=ApiCode.IN_TRASH)
    return outcome


def _ai_problems(args: argparse.Namespace, definition: ToolDefinition) -> list[str]:
    """fetchMedia/callAI checks; callAI credentials (``llm:credential:{id}``) are checked
    only when Redis answers, else a note says they were not."""
    from redis.exceptions import RedisError

    from chatflow.runtime.blocks.ai_checks import check_ai_blocks, credential_ids

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

"""Fork: run a finished execution again from one of its blocks, through the normal runtime.

The fork is an ordinary executeTool command, so it gets everything a command gets (the
streams, one deadline, guardrails, debug events, metrics). What makes it start mid-way is
the tool it names: a published record ``tool:fork:<publishedToolId>:<id>`` (with the TTL of
an execution's state) holding the definition with ``onboardingBlockId`` moved to the fork's
block, and the variables the original had when it reached that block as the command's
session variables. Blocks before the fork point are not in the path, so their side effects
are not repeated. The original run and its rows are never touched.

Its answer goes to a reply stream of its own (``stream:tool-results:fork-<id>``, inside the
default ``CHATFLOW_REPLY_STREAMS``), never to the original command's replyTo. The published
record carries ``forkOf``; the history projection reads it (the definition is stored with
the run) to record ``forkedFrom`` and to count the run under the tool it forked. Its workspace is
the caller's, fixed when it starts (the record says so), as for every run.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from chatflow.runtime.errors import ChatflowError
from chatflow.schemas.wire import ExecuteToolCommand

from ..keys import FORK_PREFIX, Keys, origin_of
from ..redaction import MASK
from ..redis_client import Client
from ..registry.errors import ApiCode
from ..registry.scope import Grant

MAX_NAMED = 10  # masked places named in one refusal; the rest are counted


class ForkRefused(ChatflowError):
    """Raised when a fork cannot start: a block the run never reached, a bad definition, a
    secret the record only holds masked."""

    def __init__(self, message: str, code: ApiCode = ApiCode.INVALID) -> None:
        super().__init__(message)
        self.code = code


def masked_places(value: Any, path: str = "", depth: int = 0) -> list[str]:
    """Where ``value`` holds a value the history masked (``***``, whole or inside a text such
    as ``Bearer ***``): dotted paths. The record never had the secret, so a fork that ran
    with these would send the mask itself, e.g. as an Authorization header."""
    if depth > 64:  # JSON that deep is not a tool's; nothing there is looked at
        return []
    if isinstance(value, str):
        return [path or "$"] if MASK in value else []
    if isinstance(value, dict):
        return [p for k, v in value.items()
                for p in masked_places(v, f"{path}.{k}" if path else str(k), depth + 1)]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in masked_places(v, f"{path}[{i}]", depth + 1)]
    return []


def _named(places: list[str]) -> str:
    more = len(places) - MAX_NAMED
    return ", ".join(places[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")


def _targets(value: Any, depth: int = 0) -> list[str]:
    """Every ``blockId`` a block's JSON points at (its default output, its conditions')."""
    if depth > 64:
        return []
    if isinstance(value, dict):
        own = [value["blockId"]] if isinstance(value.get("blockId"), str) else []
        return own + [t for v in value.values() for t in _targets(v, depth + 1)]
    if isinstance(value, list):
        return [t for v in value for t in _targets(v, depth + 1)]
    return []


def reachable(blocks: dict[str, Any], start: str) -> set[str]:
    """The blocks a run starting at ``start`` can reach."""
    seen, todo = set(), [start]
    while todo:
        block_id = todo.pop()
        if block_id in seen or block_id not in blocks:
            continue
        seen.add(block_id)
        todo += _targets(blocks[block_id])
    return seen


def refuse_masked(variables: dict[str, Any], definition: dict[str, Any] | None,
                  from_block: str) -> None:
    """Refuse a fork that would run with masked secrets: variables still ``***`` after the
    caller's values were laid over them, or masked values (header values) in a block of the
    recorded definition the fork can reach (``definition`` is None when the caller chose a
    definition of their own)."""
    masked = masked_places(variables)
    if masked:
        raise ForkRefused(
            f"variables {_named(masked)} hold values masked when the run was recorded "
            "(secrets are never stored in the history): pass their real values in "
            "`variables`", code=ApiCode.FORK_NEEDS_SECRETS)
    if definition is not None and isinstance(definition.get("blocks"), dict):
        ahead = reachable(definition["blocks"], from_block)
        blocks = sorted(b for b in ahead if masked_places(definition["blocks"][b]))
        if blocks:
            raise ForkRefused(
                f"the definition as this run used it was recorded with secret values masked "
                f"(blocks {_named(blocks)}): fork with `definition` \"draft\" (the tool's "
                "current draft) or a JSON definition that carries them",
                code=ApiCode.FORK_NEEDS_SECRETS)


def variables_at(steps: list[dict[str, Any]], block_id: str) -> dict[str, Any]:
    """The variables a run had when it reached ``block_id`` (the first time): its starting
    variables with every earlier block's writes applied, in order."""
    variables: dict[str, Any] = {}
    for step in steps:
        if step["type"] == "started":
            variables = dict((step.get("detail") or {}).get("variables") or {})
        elif step["type"] == "block":
            if step["blockId"] == block_id:
                return variables
            variables.update(step.get("writes") or {})
    raise ForkRefused(f"fromBlockId {block_id!r}: this run never reached that block; fork "
                      "from a block on its path (the run page highlights it)")


@dataclass(frozen=True, slots=True)
class Fork:
    command: ExecuteToolCommand
    published_tool_id: str
    reply_to: str


async def start_fork(client: Client, keys: Keys, run: dict[str, Any], *, grant: Grant,
                     from_block: str, variables: dict[str, Any] | None,
                     definition: dict[str, Any] | None, ttl_s: int, reply_allowed: Any) -> Fork:
    """Publish the fork's tool and its command; the caller waits for the answer (or not).

    The fork runs in ``grant``'s workspace (the caller's, who could see ``run``): its record
    says so, so its blocks and every child it spawns resolve there. The record is made for
    this one command (``forCommand``): no other command and no callTool can run it."""
    published = run.get("published") or {}
    chosen = definition if definition is not None else published.get("definition")
    if not isinstance(chosen, dict):
        raise ForkRefused("the definition this run used is no longer stored: pass "
                          "`definition` (a JSON tool definition, or \"draft\")")
    blocks = chosen.get("blocks")
    if not isinstance(blocks, dict) or from_block not in blocks:
        raise ForkRefused(f"fromBlockId {from_block!r}: the definition has no such block")
    start = variables_at(run["steps"], from_block)
    start.update(variables or {})
    refuse_masked(start, chosen if definition is None else None, from_block)
    fork_id = uuid.uuid4().hex[:12]
    origin = origin_of(str(run["publishedToolId"]))
    pt = f"{FORK_PREFIX}{origin}:{fork_id}"
    command_id = f"fork-{fork_id}"
    record = {"id": pt, "toolId": run["toolId"], "name": str(published.get("name") or ""),
              "definition": {**chosen, "onboardingBlockId": from_block},
              "workspace": grant.workspace, "forCommand": command_id,
              "forkOf": {"executionId": run["executionId"], "blockId": from_block,
                         "publishedToolId": origin}}
    await client.set(keys.tool(pt), json.dumps(record), ex=ttl_s)
    reply_to = f"{keys.prefix}stream:tool-results:fork-{fork_id}"
    if reply_allowed(reply_to):
        await private_reply_stream(client, reply_to, ttl_s)
    else:  # an operator narrowed CHATFLOW_REPLY_STREAMS
        reply_to = keys.results
    command = msgspec.convert({
        "commandId": command_id,
        "action": {"id": f"fork-{fork_id}", "type": "executeTool", "toolId": run["toolId"],
                   "publishedToolId": pt, "outputVariable": "result", "onError": "continue",
                   "errorVariable": "error"},
        "context": {"contactId": run.get("contactId") or "", "variables": start,
                    "debug": False},
        "replyTo": reply_to}, ExecuteToolCommand)
    await client.xadd(keys.commands, {"data": msgspec.json.encode(command)})
    return Fork(command, pt, reply_to)


async def private_reply_stream(client: Client, stream: str, ttl_s: int) -> None:
    """Make ``stream`` now, empty, expiring in ``ttl_s``: the runtime's XADD of the answer
    keeps the TTL, so a reply stream nobody reads (a fork without ``?wait``) goes away by
    itself instead of holding its answer for ever."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.xadd(stream, {"made": "1"})
        pipe.xtrim(stream, maxlen=0)
        pipe.expire(stream, ttl_s)
        await pipe.execute()

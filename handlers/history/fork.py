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
the run) to record ``forkedFrom`` and to keep the run in its original tool's workspace.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from chatflow.runtime.errors import ChatflowError
from chatflow.schemas.wire import ExecuteToolCommand

from ..keys import Keys
from ..redis_client import Client

FORK_PREFIX = "fork:"


class ForkRefused(ChatflowError):
    """Raised when a fork cannot start: a block the run never reached, a bad definition."""


def origin_of(published_tool_id: str) -> str:
    """The publishedToolId a fork's tool was made from (itself for any other tool)."""
    if published_tool_id.startswith(FORK_PREFIX):
        return published_tool_id[len(FORK_PREFIX):].rsplit(":", 1)[0]
    return published_tool_id


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


async def start_fork(client: Client, keys: Keys, run: dict[str, Any], *, from_block: str,
                     variables: dict[str, Any] | None, definition: dict[str, Any] | None,
                     ttl_s: int, reply_allowed: Any) -> Fork:
    """Publish the fork's tool and its command; the caller waits for the answer (or not)."""
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
    fork_id = uuid.uuid4().hex[:12]
    origin = origin_of(str(run["publishedToolId"]))
    pt = f"{FORK_PREFIX}{origin}:{fork_id}"
    record = {"id": pt, "toolId": run["toolId"], "name": str(published.get("name") or ""),
              "definition": {**chosen, "onboardingBlockId": from_block},
              "forkOf": {"executionId": run["executionId"], "blockId": from_block,
                         "publishedToolId": origin}}
    await client.set(keys.tool(pt), json.dumps(record), ex=ttl_s)
    reply_to = f"{keys.prefix}stream:tool-results:fork-{fork_id}"
    if not reply_allowed(reply_to):  # an operator narrowed CHATFLOW_REPLY_STREAMS
        reply_to = keys.results
    command = msgspec.convert({
        "commandId": f"fork-{fork_id}",
        "action": {"id": f"fork-{fork_id}", "type": "executeTool", "toolId": run["toolId"],
                   "publishedToolId": pt, "outputVariable": "result", "onError": "continue",
                   "errorVariable": "error"},
        "context": {"contactId": run.get("contactId") or "", "variables": start,
                    "debug": False},
        "replyTo": reply_to}, ExecuteToolCommand)
    await client.xadd(keys.commands, {"data": msgspec.json.encode(command)})
    return Fork(command, pt, reply_to)

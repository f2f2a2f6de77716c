"""The address of a command that does not fit the wire types: commandId, action id, replyTo.

Its ``invalid_command`` result needs these three. msgspec reads them from whatever it can
decode; a command nested deeper than a recursive decoder allows (a variable 20,000 levels
deep) is read with ijson's event parser instead, which keeps no stack per level: the three
fields sit at the top (the action id one level below), and everything else is skipped event
by event.
"""

from __future__ import annotations

from typing import Any

import ijson
import msgspec

Head = tuple[str, str | None, str | None]  # commandId, action id, replyTo


def command_head(raw: bytes) -> Head | None:
    """The command's address, or None when no non-empty string commandId can be read."""
    try:
        loose: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    except RecursionError:
        return _deep_head(raw)
    if not isinstance(loose, dict):
        return None
    action = loose.get("action")
    action_id = action.get("id") if isinstance(action, dict) else None
    return _head(loose.get("commandId"), action_id, loose.get("replyTo"))


def _head(command_id: Any, action_id: Any, reply_to: Any) -> Head | None:
    if not isinstance(command_id, str) or not command_id:
        return None
    return (command_id, action_id if isinstance(action_id, str) else None,
            reply_to if isinstance(reply_to, str) else None)


def _deep_head(raw: bytes) -> Head | None:
    found: dict[str, Any] = {}
    depth, key, action_key, in_action = 0, None, None, False
    try:
        for event, value in ijson.basic_parse(raw):
            if event in ("start_map", "start_array"):
                if depth == 0 and event != "start_map":
                    return None  # not an object: no commandId to read
                depth += 1
                in_action = in_action or (depth == 2 and key == "action" and event == "start_map")
            elif event in ("end_map", "end_array"):
                depth -= 1
                in_action = in_action and depth >= 2
            elif event == "map_key" and depth == 1:
                key = value
            elif event == "map_key" and depth == 2 and in_action:
                action_key = value
            elif event == "string" and depth == 1 and key in ("commandId", "replyTo"):
                found[key] = value
            elif event == "string" and depth == 2 and in_action and action_key == "id":
                found["action.id"] = value
    except (ijson.JSONError, ValueError):
        return None
    return _head(found.get("commandId"), found.get("action.id"), found.get("replyTo"))

"""What changed between two tool definitions, by block and by field (no I/O).

``diff_definitions(a, b)`` compares two definitions as JSON: blocks added, removed and
changed (each change a field path inside the block, with both values), and the fields
outside the blocks (``onboardingBlockId``, ``inputs``, ``description`` ...). Canvas
positions (``meta.positions``) are where a block is drawn, not what it does: left out.
``render`` writes the diff as text for ``chatflow tools diff``.
"""

from __future__ import annotations

import json
from typing import Any

MISSING = object()
MAX_DEPTH = 6  # deeper values are compared whole
VALUE_CHARS = 100


def _flatten(value: Any, prefix: str, out: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    if isinstance(value, dict) and value and depth < MAX_DEPTH:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)
    elif isinstance(value, list) and value and depth < MAX_DEPTH:
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}.{i}" if prefix else str(i), out, depth + 1)
    else:
        out[prefix] = value
    return out


def _fields(a: Any, b: Any, prefix: str = "") -> list[dict[str, Any]]:
    left, right = _flatten(a, prefix, {}), _flatten(b, prefix, {})
    out = []
    for path in sorted(set(left) | set(right), key=_path_key):
        before, after = left.get(path, MISSING), right.get(path, MISSING)
        if before != after or type(before) is not type(after):
            change: dict[str, Any] = {"field": path}
            if before is not MISSING:
                change["from"] = before
            if after is not MISSING:
                change["to"] = after
            out.append(change)
    return out


def _path_key(path: str) -> list[tuple[int, Any]]:
    return [(0, int(p)) if p.isdecimal() else (1, p) for p in path.split(".")]


def _blocks(definition: Any) -> dict[str, Any]:
    blocks = definition.get("blocks") if isinstance(definition, dict) else None
    return blocks if isinstance(blocks, dict) else {}


def _outside(definition: Any) -> dict[str, Any]:
    if not isinstance(definition, dict):
        return {}
    out = {k: v for k, v in definition.items() if k != "blocks"}
    meta = out.get("meta")
    if isinstance(meta, dict):
        rest = {k: v for k, v in meta.items() if k != "positions"}
        if rest:
            out["meta"] = rest
        else:
            out.pop("meta")
    return out


def diff_definitions(a: Any, b: Any) -> dict[str, Any]:
    """``{"blocks": {"added", "removed", "changed": {id: [changes]}}, "fields": [changes]}``;
    a block's type is given for added and removed ones (``{"id", "type"}``)."""
    left, right = _blocks(a), _blocks(b)
    changed = {}
    for block_id in sorted(set(left) & set(right)):
        fields = _fields(left[block_id], right[block_id])
        if fields:
            changed[block_id] = fields
    return {
        "blocks": {
            "added": [_named(i, right[i]) for i in sorted(set(right) - set(left))],
            "removed": [_named(i, left[i]) for i in sorted(set(left) - set(right))],
            "changed": changed,
        },
        "fields": _fields(_outside(a), _outside(b)),
    }


def _named(block_id: str, block: Any) -> dict[str, Any]:
    kind = block.get("type") if isinstance(block, dict) else None
    return {"id": block_id, "type": kind}


def is_empty(diff: dict[str, Any]) -> bool:
    blocks = diff["blocks"]
    return not (blocks["added"] or blocks["removed"] or blocks["changed"] or diff["fields"])


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS - 1] + "…"


def _change_line(change: dict[str, Any]) -> str:
    if "from" not in change:
        return f"{change['field']}: (none) → {_shown(change['to'])}"
    if "to" not in change:
        return f"{change['field']}: {_shown(change['from'])} → (none)"
    return f"{change['field']}: {_shown(change['from'])} → {_shown(change['to'])}"


def render(diff: dict[str, Any], title: str) -> str:
    """The diff as text: one line per field, blocks marked ``+`` added, ``-`` removed,
    ``~`` changed."""
    lines = [title]
    if is_empty(diff):
        lines.append("  no difference")
    for change in diff["fields"]:
        lines.append(f"  ~ {_change_line(change)}")
    blocks = diff["blocks"]
    for item in blocks["added"]:
        lines.append(f"  + block {item['id']} ({item['type']})")
    for item in blocks["removed"]:
        lines.append(f"  - block {item['id']} ({item['type']})")
    for block_id, changes in blocks["changed"].items():
        lines.append(f"  ~ block {block_id}")
        lines += [f"      {_change_line(c)}" for c in changes]
    return "\n".join(lines)

"""Saved test cases: what a case expects, and how a run is judged against it (no I/O).

A case expects an error when ``expect.errorCode`` is given, and success otherwise; then
``result`` (equal), ``resultMatches`` (an RE2 pattern found in the result) and ``path``
(the block ids the tool itself visited, in order) when given. Each unmet expectation is one
difference ``{"field", "expected", "actual"}``, so a report says exactly what changed.

Mocks: a block id (the tested tool's own block) or ``<toolId>/<blockId>`` (a block of a
tool it calls, or of itself) maps to the answer that block gets instead of the outside
world's. Which answer each block type takes is :data:`MOCK_KINDS`.
"""

from __future__ import annotations

from typing import Any

from ..conditions import match_regex

# block type -> the mock kinds it takes ("error" fits every mockable block)
MOCK_KINDS: dict[str, tuple[str, ...]] = {
    "httpCall": ("http", "error"), "callEndpoint": ("http", "error"),
    "callAI": ("ai", "error"), "fetchMedia": ("media", "error"),
}
SHAPES = {"http": "{status, body, headers}", "ai": "{result}", "media": "{base64, mimeType}",
          "error": "{error: {code, message}}"}
REGEX_TEXT_MAX = 1 << 20  # a result longer than this is not searched by resultMatches


def mock_kind(mock: dict[str, Any]) -> str | None:
    """Which answer a mock gives, by its keys; None when it fits no kind."""
    for key, kind in (("error", "error"), ("status", "http"), ("result", "ai"),
                      ("base64", "media")):
        if key in mock:
            return kind
    return None


def mock_problem(block_type: str, mock: dict[str, Any]) -> str | None:
    """Why ``mock`` cannot answer a block of ``block_type``, or None."""
    kinds = MOCK_KINDS.get(block_type)
    if kinds is None:
        return (f"a {block_type} block reaches nothing outside and takes no mock (mockable: "
                f"{', '.join(MOCK_KINDS)})")
    if mock_kind(mock) not in kinds:
        wanted = " or ".join(SHAPES[k] for k in kinds)
        return f"a {block_type} block takes {wanted}"
    return None


def mock_for(mocks: dict[str, Any], tool_id: str, block_id: str, depth: int
             ) -> tuple[str, dict[str, Any]] | None:
    """The key and mock of a block: ``<toolId>/<blockId>`` anywhere, the bare id at depth 0."""
    qualified = f"{tool_id}/{block_id}"
    if qualified in mocks:
        return qualified, mocks[qualified]
    if depth == 0 and block_id in mocks:
        return block_id, mocks[block_id]
    return None


def judge(expect: dict[str, Any], *, ok: bool, result: str, error: dict[str, Any] | None,
          path: list[str]) -> list[dict[str, Any]]:
    """The differences between what a case expects and what its run did (empty: it passed)."""
    out: list[dict[str, Any]] = []
    code = (error or {}).get("code")
    wanted_code = expect.get("errorCode")
    if wanted_code:
        if ok or code != wanted_code:
            out.append(_difference("errorCode", wanted_code, None if ok else code,
                                   (error or {}).get("message")))
    elif not ok:
        out.append(_difference("ok", True, False,
                               f"{code}: {(error or {}).get('message', '')}"))
    if expect.get("result") is not None and result != expect["result"]:
        out.append(_difference("result", expect["result"], result))
    pattern = expect.get("resultMatches")
    if pattern:
        found, why = match_regex(result, pattern, REGEX_TEXT_MAX)
        if not found:
            out.append(_difference("resultMatches", pattern, result, why))
    if expect.get("path") is not None and list(expect["path"]) != path:
        out.append(_difference("path", list(expect["path"]), path))
    return out


def _difference(field: str, expected: Any, actual: Any, note: str | None = None
                ) -> dict[str, Any]:
    out = {"field": field, "expected": expected, "actual": actual}
    if note:
        out["note"] = note
    return out

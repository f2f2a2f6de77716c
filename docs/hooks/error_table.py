"""mkdocs hook: the tables of docs/errors.md, rendered from the two error tables.

Every code is one row of ``ErrorCode`` (runtime/errors.py: a tool run's ``error.code``) or of
``ApiCode`` (handlers/registry/errors.py: an HTTP API error body's ``error``) and nowhere else:
the site renders the rows where docs/errors.md holds :data:`MARKER` and :data:`API_MARKER`, so
adding a code changes the docs with it.
"""

from __future__ import annotations

import re
from typing import Any

from chatflow.handlers.registry.errors import ApiCode
from chatflow.runtime.errors import ErrorCode

MARKER = "<!-- the table: rendered from ErrorCode (runtime/errors.py) by docs/hooks/error_table.py -->"
API_MARKER = ("<!-- the API's table: rendered from ApiCode (handlers/registry/errors.py) by "
              "docs/hooks/error_table.py -->")


def render() -> str:
    lines = ["| code | fatal | message | raised when |", "|---|---|---|---|"]
    for row in ErrorCode:
        message = row.template + ("" if row.tail == " ({detail})" else row.tail)
        when = row.when.removeprefix("Raised when ")
        lines.append(f"| `{row}` | {'yes' if row.fatal else ''} | `{message}` | {when} |")
    return "\n".join(lines)


# Settings and the mask are code, not emphasis: CHATFLOW_API_HELD_* and *** would open one.
_CODE = re.compile(r"(CHATFLOW_[A-Z_*]+|\*\*\*)")


def render_api() -> str:
    lines = ["| code | raised when |", "|---|---|"]
    for row in ApiCode:
        when = _CODE.sub(r"`\1`", row.when.removeprefix("Raised when "))
        lines.append(f"| `{row}` | {when} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()).replace(API_MARKER, render_api())

"""mkdocs hook: the table of docs/errors.md, rendered from the one error table.

Every code is one row of ``ErrorCode`` (runtime/errors.py) and nowhere else: the site renders
the rows where docs/errors.md holds :data:`MARKER`, so adding a code changes the docs with it.
"""

from __future__ import annotations

from typing import Any

from chatflow.runtime.errors import ErrorCode

MARKER = "<!-- the table: rendered from ErrorCode (runtime/errors.py) by docs/hooks/error_table.py -->"


def render() -> str:
    lines = ["| code | fatal | message | raised when |", "|---|---|---|---|"]
    for row in ErrorCode:
        message = row.template + ("" if row.tail == " ({detail})" else row.tail)
        when = row.when.removeprefix("Raised when ")
        lines.append(f"| `{row}` | {'yes' if row.fatal else ''} | `{message}` | {when} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown

"""Pulling the Python code blocks out of a prose document with no fences (the SDK fixture).

A block starts at a column-0 line that only code starts with (a ``# [`` marker,
``from``/``import``, ``@tool``) and runs on through lines that look like Python;
it ends at the first column-0 line that reads as prose while everything before
it already parses. Trailing blank lines are dropped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

# The project's own fixture: the seed's code examples, quoted between prose of our own.
SEED = Path(__file__).resolve().parents[1] / "fixtures" / "sdk" / "tools_and_function_calling.txt"

_START = re.compile(r"^(# \[|from \w|import \w|@tool\b)")
_PYTHONIC = re.compile(
    r"^(#|@|from |import |def |async def |class |assert |return |if |for |with |await |"
    r"[)\]}]|[A-Za-z_][\w.]*\s*(=|\(|\[|:))"
)


@dataclass(frozen=True)
class Block:
    line: int
    source: str


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    return True


def extract_blocks(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if not _START.match(lines[index]):
            index += 1
            continue
        start, body = index, [lines[index]]
        index += 1
        while index < len(lines):
            line = lines[index]
            is_prose = line.strip() and not line[0].isspace() and not _PYTHONIC.match(line)
            if is_prose and _parses(body):
                break
            body.append(line)
            index += 1
        while body and not body[-1].strip():
            body.pop()
        assert _parses(body), f"seed block at line {start + 1} does not parse"
        blocks.append(Block(start + 1, "\n".join(body) + "\n"))
    return blocks


def seed_blocks() -> list[Block]:
    return extract_blocks(SEED.read_text(encoding="utf-8"))

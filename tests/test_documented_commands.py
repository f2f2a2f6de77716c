"""Every `python -m pytest PATH...` command in README.md and docs/ selects at least one test.

pyproject adds `-m 'not slow'` to every run, so a command naming a slow suite without
`-m slow` (or `-m ''`) collects nothing and reports success: the finding this guards."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"python -m pytest([^`|\n]*)")


def documented() -> list[tuple[str, list[str]]]:
    """(where, arguments) of each documented command that names a path."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for match in COMMAND.finditer(line):
                args = shlex.split(match.group(1).rstrip(" \\"))
                if any(a.startswith("tests") for a in args):
                    found.append((f"{page.relative_to(ROOT)}:{number}", args))
    return found


def parse(args: list[str]) -> tuple[list[str], str, str | None]:
    """The paths, the mark expression (the last -m wins) and the -k expression."""
    paths, marks, keyword = [], "not slow", None
    rest = iter(args)
    for arg in rest:
        if arg == "-m":
            marks = next(rest)
        elif arg == "-k":
            keyword = next(rest)
        elif arg in ("-p", "-n"):
            next(rest)
        elif not arg.startswith("-"):
            paths.append(arg)
    return paths, marks, keyword


def selects(row: dict[str, Any], paths: list[str], marks: str, keyword: str | None) -> bool:
    under = any(row["id"] == p or row["id"].startswith((p.rstrip("/") + "/", p + "::"))
                for p in paths)
    wanted = {"": True, "slow": row["slow"], "not slow": not row["slow"]}[marks]
    named = keyword is None or any(keyword.lower() in k.lower() for k in row["keywords"])
    return under and wanted and named


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    paths = sorted({p for _where, args in documented() for p in parse(args)[0]})
    target = tmp_path_factory.mktemp("marks") / "marks.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-n", "0",
         "-p", "no:cacheprovider", "-p", "tests.support.collect_marks", *paths],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "CHATFLOW_COLLECT_MARKS": str(target)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads(target.read_text())
    return rows


def test_the_docs_name_test_commands_to_check() -> None:
    assert len(documented()) >= 20


@pytest.mark.parametrize(("where", "args"), documented(), ids=[w for w, _ in documented()])
def test_each_documented_test_command_selects_tests(
        where: str, args: list[str], collected: list[dict[str, Any]]) -> None:
    paths, marks, keyword = parse(args)
    assert marks in ("", "slow", "not slow"), f"{where}: cannot read -m {marks!r}"
    chosen = [r["id"] for r in collected if selects(r, paths, marks, keyword)]
    assert chosen, (f"{where}: `python -m pytest {' '.join(args)}` selects no test "
                    f"(the default run adds -m 'not slow'; a slow suite needs -m slow)")

"""The Studio's JavaScript stays in functions that fit on a screen: ESLint, with the project's
own configuration (eslint.config.js), finds no function over 80 lines in the Studio's modules,
and the same run flags an 81-line function (so the rule is live, not merely configured).

ESLint and Node come from `make js-tools` and the test extra; without them this skips and says
how to get them, and with CI=true it fails."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.studio.support import unavailable

ROOT = Path(__file__).resolve().parents[2]
ESLINT = ROOT / "node_modules" / ".bin" / "eslint"
STATIC = ROOT / "handlers" / "studio" / "static"
RULE = "max-lines-per-function"


@pytest.fixture(scope="module")
def eslint() -> Path:
    if shutil.which("node") is None or not ESLINT.exists():
        unavailable("ESLint is not installed",
                    "run `make js-tools` (ESLint and TypeScript, on the Node the test extra "
                    "installs: `pip install -e '.[test]'`)")
    return ESLINT


def run(eslint: Path, *args: str, stdin: str | None = None) -> list[dict[str, Any]]:
    done = subprocess.run([str(eslint), "--format", "json", *args], cwd=ROOT, input=stdin,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: problems found; 2: ESLint itself failed
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def too_long(results: list[dict[str, Any]]) -> list[str]:
    return [f"{Path(r['filePath']).relative_to(ROOT)}:{m['line']}: {m['message']}"
            for r in results for m in r["messages"] if m.get("ruleId") == RULE]


def function_of(lines: int) -> str:
    body = "\n".join(f"  total += {i};" for i in range(lines - 3))
    return f"export function long(total) {{\n{body}\n  return total;\n}}\n"


def test_no_studio_javascript_function_is_over_80_lines(eslint: Path) -> None:
    results = run(eslint, str(STATIC))
    checked = {Path(r["filePath"]).relative_to(STATIC).as_posix() for r in results}
    assert {"js/pages/builder.js", "js/canvas.js", "js/forms.js", "js/builder/store.js"} <= checked
    assert not any(p.startswith("vendor/") for p in checked)  # the vendored libraries are not ours
    assert too_long(results) == []


def test_the_check_flags_an_81_line_function_and_passes_an_80_line_one(eslint: Path) -> None:
    # Named as a Studio module, so the project's configuration for those files applies.
    name = str(STATIC / "js" / "probe.js")
    assert function_of(80).count("\n") == 80 and function_of(81).count("\n") == 81
    assert too_long(run(eslint, "--stdin", "--stdin-filename", name, stdin=function_of(80))) == []
    flagged = too_long(run(eslint, "--stdin", "--stdin-filename", name, stdin=function_of(81)))
    assert len(flagged) == 1 and "(81)" in flagged[0], flagged

"""The test tiers: heavy suites are marked slow, and CI runs each tier (and the chaos run) once."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = [*sorted((ROOT / "tests" / "chaos").glob("test_*.py")),
         *sorted((ROOT / "tests" / "cluster").glob("test_*.py")),
         ROOT / "tests" / "robustness" / "test_api_fuzz.py",
         ROOT / "tests" / "robustness" / "test_sandbox_abuse.py"]


def _module_marks(path: Path) -> list[str]:
    marks = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks.append(ast.unparse(node.value))
    return marks


@pytest.mark.parametrize("path", HEAVY, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_heavy_suite_is_in_the_slow_tier(path: Path) -> None:
    assert _module_marks(path) == ["pytest.mark.slow"]


def test_the_default_run_leaves_the_slow_tier_out() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not slow'" in options["addopts"]


def test_ci_runs_the_default_tier_then_the_slow_tier_and_the_chaos_scenario_once() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    default, slow = script.index("python -m pytest\n"), script.index("python -m pytest -m slow")
    assert default < slow
    # the chaos scenario runs as tests/chaos/test_chaos_short.py in the slow tier, not again
    assert "chaos-short" not in script and "bench.chaos" not in script
    assert "exit 5" in script and "apt_install chromium chromium" in script


def test_a_ci_step_fails_the_run_unless_it_is_an_empty_pytest_tier(tmp_path: Path) -> None:
    empty = tmp_path / "test_nothing_slow.py"
    empty.write_text("def test_fast() -> None:\n    pass\n")
    script = (f". {ROOT / '.ci' / 'steps.sh'}\n"
              f"step empty {sys.executable} -m pytest -q -p no:cacheprovider -m slow {empty}\n"
              f"step broken {sys.executable} -m pytest -q -p no:cacheprovider -k nothing_here_at_all "
              f"{ROOT / 'tests' / 'no_such_file.py'}\n"
              "step lint false\nstep fine true\n"
              'echo "failed=${failed[*]}"\n')
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert run.stdout.strip().splitlines()[-1] == "failed=broken lint"
    assert "ci: empty collected no tests (exit 5), not a failure" in run.stdout

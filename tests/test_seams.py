"""The seams of docs/architecture.md hold: the SDK imports nothing of the workers, and the
modules' imports form no cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder -> the package it installs as
PACKAGES = {"runtime": "chatflow.runtime", "handlers": "chatflow.handlers",
            "schemas": "chatflow.schemas", "chatflow_agent": "chatflow_agent"}

BLOCKED_IMPORT = """
import importlib.abc, pkgutil, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "chatflow.handlers" or name.startswith("chatflow.handlers."):
            raise ImportError(f"blocked: {name}")
        return None

sys.meta_path.insert(0, Blocker())
import chatflow_agent
for info in pkgutil.walk_packages(chatflow_agent.__path__, "chatflow_agent."):
    __import__(info.name)
from chatflow_agent.runtime_tools import NativeToolProxy, RuntimeConnection, RuntimeTools
assert not [m for m in sys.modules if m.startswith("chatflow.handlers")]
print("ok")
"""


def test_the_sdk_imports_and_loads_every_module_with_the_handlers_blocked() -> None:
    run = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "ok"


def modules() -> Iterator[tuple[str, Path]]:
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def imports_of(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports: at the top, under TYPE_CHECKING or inside a function (a
    lazy import still ties the two modules together)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def test_no_module_of_the_sdk_imports_the_handlers() -> None:
    offenders = {name: sorted(i for i in _all_imports(path) if i.startswith("chatflow.handlers"))
                 for name, path in modules() if name.startswith("chatflow_agent")}
    assert {name: found for name, found in offenders.items() if found} == {}


def _all_imports(path: Path) -> set[str]:
    """Every module an SDK file names in an import, wherever the statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def test_the_imports_form_no_cycle() -> None:
    known = dict(modules())
    graph = {name: {m for m in imports_of(name, path) if m in known and m != name}
             for name, path in known.items()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    # A package importing its own submodules (``from .main import main``) is not a cycle.
    real = [c for c in cycles if not all(c[0].startswith(m) or m.startswith(c[0]) for m in c)]
    assert real == []


def test_no_test_imports_the_benchmarks() -> None:
    offenders = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("*.py")
                       if any(m == "bench" or m.startswith("bench.") for m in _all_imports(path)))
    assert offenders == []

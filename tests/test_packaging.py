"""The distribution ships every package in the tree (pyproject lists them by hand)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_in_the_tree_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for top in ("runtime", "handlers", "schemas", "chatflow_agent", "examples"):
        for init in (ROOT / top).rglob("__init__.py"):
            name = ".".join(init.parent.relative_to(ROOT).parts)
            found.add(name.replace("examples", "chatflow_examples", 1) if top == "examples" else name)
    assert found == listed


def test_lua_scripts_are_package_data() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.lua" in data["*"]
    assert list((ROOT / "handlers" / "lua").glob("*.lua"))

"""The distribution ships every package in the tree, under one namespace (pyproject lists them by hand)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Top-level folders and the names they install under.
FOLDERS = {"runtime": "chatflow.runtime", "handlers": "chatflow.handlers", "schemas": "chatflow.schemas",
           "examples": "chatflow.examples", "chatflow_agent": "chatflow_agent"}


def _setuptools() -> dict[str, object]:
    table: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return table


def test_every_package_in_the_tree_is_listed_in_pyproject() -> None:
    listed = set(_setuptools()["packages"])  # type: ignore[call-overload]
    found = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            found.add(".".join((name, *init.parent.relative_to(ROOT / folder).parts)))
    assert found == listed


def test_the_top_level_folders_map_into_the_chatflow_namespace() -> None:
    mapping = _setuptools()["package-dir"]
    assert mapping == {name: folder for folder, name in FOLDERS.items() if name != "chatflow_agent"}


def test_lua_scripts_are_package_data() -> None:
    data = _setuptools()["package-data"]
    assert "*.lua" in data["*"]  # type: ignore[index]
    assert list((ROOT / "handlers" / "dataplane" / "lua").glob("*.lua"))

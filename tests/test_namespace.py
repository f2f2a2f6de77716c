"""The project imports under one namespace: chatflow.* and chatflow_agent, nothing else."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_repository_root_is_not_on_sys_path() -> None:
    assert all(Path(p or ".").resolve() != ROOT for p in sys.path)


@pytest.mark.parametrize("old", ["runtime", "handlers", "schemas", "chatflow_examples"])
def test_the_old_top_level_names_do_not_import(old: str) -> None:
    assert importlib.util.find_spec(old) is None
    assert old not in sys.modules


def test_the_installed_names_resolve_to_the_top_level_folders() -> None:
    import chatflow.handlers
    import chatflow.runtime

    assert Path(chatflow.runtime.__file__).resolve().parent == ROOT / "runtime"
    assert Path(chatflow.handlers.__file__).resolve().parent == ROOT / "handlers"

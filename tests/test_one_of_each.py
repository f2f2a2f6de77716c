"""What issue 31 found written twice exists once: the producer's client (the SDK's, which the
handlers use), its ResultTimeout, last-id logic and result decoder, and ``tool_metrics``."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from chatflow.handlers.interfaces import client as handlers_client
from chatflow_agent import errors, runtime_client

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("runtime", "handlers", "schemas", "chatflow_agent", "examples", "bench")
ONCE = {"tool_metrics", "ResultTimeout", "last_id", "wait_results", "wait_for", "publish"}


def top_level_names() -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    where[node.name].append(str(path.relative_to(ROOT)))
    return where


def test_each_is_defined_once() -> None:
    where = top_level_names()
    assert {name: where[name] for name in ONCE if len(where[name]) != 1} == {}


def test_the_handlers_use_the_sdks_producer_client() -> None:
    for name in ("execute", "last_id", "publish", "wait_results"):
        assert getattr(handlers_client, name) is getattr(runtime_client, name), name
    assert handlers_client.ResultTimeout is errors.ResultTimeout


def test_one_decoder_of_a_result() -> None:
    decoders = [str(path.relative_to(ROOT)) for folder in FOLDERS
                for path in (ROOT / folder).rglob("*.py")
                if re.search(r"Decoder\((wire\.)?ToolResult\)", path.read_text())]
    assert decoders == ["chatflow_agent/runtime_client.py"]

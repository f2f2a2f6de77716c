"""Every example of docs/agents.md, run as written against the fake providers."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.fakes import ProviderFake, Reply
from tests.sdk.provider_fixtures import serve_fake

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "agents.md"
_BLOCK = re.compile(r"<!-- example: (\w+) -->\n```python\n(.*?)```", re.DOTALL)
EXAMPLES = dict(_BLOCK.findall(DOC.read_text(encoding="utf-8")))
_FAMILIES = {"gemini": "gemini", "gpt": "openai", "claude": "anthropic"}


def _family(source: str) -> str | None:
    if "chatflow_agent.testing" in source:
        return None  # the SDK's test models: no provider, no fake, no key
    match = re.search(r'model="(\w+)', source)
    return _FAMILIES[match.group(1)] if match else None


def _script(name: str, fake: ProviderFake) -> list[Reply]:
    return {
        "usage": [fake.calls(("check_inventory", {"sku": "SKU-9"})), fake.text("Yes.")],
        "output": [fake.final({"label": "spam", "score": 0.97})],
        "context": [fake.calls(("my_orders", {})), fake.text("One open order.")],
        "timeout": [fake.calls(("slow_search", {"query": "2019 invoice"})), fake.text("Sorry.")],
        "streaming": [fake.text("Hi there!")],
        "hooks": [fake.text("Hello.")],
        "mcp": [
            fake.calls(("check_stock", {"sku": "SKU-1", "warehouse": "west"})),
            fake.text("7 units."),
        ],
    }.get(name, [])


def test_the_page_has_an_example_per_feature() -> None:
    assert set(EXAMPLES) == {
        "tools", "usage", "output", "context", "timeout", "streaming", "hooks", "mcp",
        "test_model", "function_model", "function_stream",
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_runs_as_written(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source = EXAMPLES[name]
    monkeypatch.chdir(ROOT)
    module = types.ModuleType(f"docs_example_{name}")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    namespace: dict[str, Any] = module.__dict__
    family = _family(source)
    output = io.StringIO()
    if family is None:
        exec(compile(source, f"{DOC}:{name}", "exec"), namespace)
        return
    for fake in serve_fake(family, monkeypatch):
        fake.server.script(*_script(name, fake))
        with contextlib.redirect_stdout(output):
            exec(compile(source, f"{DOC}:{name}", "exec"), namespace)
        assert len(fake.server.requests) == len(_script(name, fake)) or name == "output"
    if name == "usage":
        assert output.getvalue().splitlines() == ["Yes. stop", "20 10 30 2"]
    if name == "streaming":
        assert output.getvalue().startswith("Hi there!\nusage: Usage(")
    if name == "context":
        assert "cust-42-A17 (open), session c-7" in namespace["result"].tool_results[0].content
    if name == "mcp":
        assert namespace["result"].tool_results[0].content == "SKU-1: 7 units in west"

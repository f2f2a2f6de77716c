"""Every code block of the seed spec, extracted from the seed file and run verbatim."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import re
import threading
from typing import Any

import pytest

from chatflow_agent import Tool, ToolResult
from tests.sdk.fakes import ProviderFake, Recorded, Reply
from tests.sdk.seed import SEED, Block, seed_blocks

BLOCKS = seed_blocks()


def _imports_before(index: int) -> str:
    """The import lines shown earlier on the page, which a later block may rely on."""
    lines: list[str] = []
    for block in BLOCKS[:index]:
        for node in ast.parse(block.source).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                lines.append(ast.unparse(node))
    return "\n".join(lines)


def run_block(index: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run block ``index`` verbatim, one top-level statement at a time.

    Returns the final namespace and a snapshot after each statement, so a test
    can look at a name that a later statement of the same block rebinds.
    """
    namespace: dict[str, Any] = {"__name__": f"seed_block_{index}"}
    exec(compile(_imports_before(index), str(SEED), "exec"), namespace)
    block: Block = BLOCKS[index]
    tree = ast.parse(block.source)
    ast.increment_lineno(tree, block.line - 1)
    snapshots = []
    for statement in tree.body:
        module = ast.Module(body=[statement], type_ignores=[])
        exec(compile(module, str(SEED), "exec"), namespace)
        snapshots.append(dict(namespace))
    return namespace, snapshots


def test_the_seed_yields_six_code_blocks_in_page_order() -> None:
    firsts = [block.source.splitlines()[0] for block in BLOCKS]
    assert firsts == [
        "# [min-version: 0.3.0]",
        "# [min-version: 0.3.0]",
        "import asyncio",
        "from chatflow_agent import tool",
        "from chatflow_agent import Agent, Runner, tool",
        '# [INCORRETO]: "count" será exposto como STRING, exigindo conversão manual para int',
    ]


def test_the_simple_decorator_block_runs_and_its_tool_computes_vat() -> None:
    namespace, _ = run_block(0)
    vat = namespace["calculate_vat"]
    assert isinstance(vat, Tool)
    assert vat(100.0) == 20.0
    assert vat.execute(subtotal=100, rate=0.1) == 10.0
    parameters = vat.to_gemini_declaration()["parameters"]
    assert parameters["required"] == ["subtotal"]  # rate has a default, so it is optional


def test_the_parametrized_decorator_block_runs_and_keeps_its_override() -> None:
    namespace, _ = run_block(1)
    quote = namespace["fetch_quote"]
    assert quote.description == "Fetch the latest real-time market quote for a stock symbol."
    assert quote.to_gemini_declaration()["name"] == "lookup_stock_ticker"
    assert quote.execute(symbol="aapl") == {"symbol": "AAPL", "price": 182.50, "currency": "USD"}


def test_the_sync_and_async_block_runs_and_both_tools_execute_both_ways() -> None:
    namespace, _ = run_block(2)
    reverse, status = namespace["sync_reverse"], namespace["async_fetch_status"]
    assert reverse.execute(text="abc") == "cba"
    assert status.execute(service_name="db") == {"service": "db", "status": "healthy"}

    async def both() -> tuple[Any, Any, int]:
        loop_thread = threading.get_ident()

        def current_thread_id() -> int:
            return threading.get_ident()

        thread_of_tool = await Tool(current_thread_id).execute_async()
        return (
            await reverse.execute_async(text="xyz"),
            await status.execute_async(service_name="api"),
            thread_of_tool != loop_thread,
        )

    assert asyncio.run(both()) == ("zyx", {"service": "api", "status": "healthy"}, True)


def test_the_deep_collection_block_generates_the_schema_its_comment_promises() -> None:
    index = 3
    namespace, _ = run_block(index)
    promised = re.search(r"# Gera: (\{.*\})", BLOCKS[index].source)
    assert promised is not None
    values = namespace["sum_metrics"].to_gemini_declaration()["parameters"]["properties"]["values"]
    assert values == json.loads(promised.group(1))
    assert namespace["sum_metrics"].execute(values=[1.5, 2.5]) == 4.0


def _shipping_answer(request: Recorded) -> Reply:
    from tests.sdk.fakes import GeminiFake

    parts = request.body["contents"][-1]["parts"]
    results = {p["functionResponse"]["name"]: p["functionResponse"]["response"] for p in parts}
    cost = results["calculate_shipping"]["cost_usd"]
    stock = "in stock" if results["check_inventory"]["in_stock"] else "out of stock"
    return GeminiFake._reply(
        [{"text": f"SKU-990 is {stock}; shipping 2.5 kg to CA costs ${cost}."}]
    )


def test_the_full_example_block_runs_against_a_fake_gemini(gemini_fake: ProviderFake) -> None:
    gemini_fake.server.script(
        gemini_fake.calls(
            ("check_inventory", {"sku": "SKU-990"}),
            ("calculate_shipping", {"weight_kg": 2.5, "destination": "CA"}),
        ),
        _shipping_answer,
    )
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        namespace, _ = run_block(4)

    assert output.getvalue().splitlines() == [
        "Agent Response: SKU-990 is in stock; shipping 2.5 kg to CA costs $21.25.",
        "Tools Executed: ['check_inventory', 'calculate_shipping']",
    ]
    first, second = gemini_fake.server.requests
    assert first.body["systemInstruction"]["parts"][0]["text"].startswith("Help customers")
    assert gemini_fake.declared_tools(first) == ["calculate_shipping", "check_inventory"]
    assert first.body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Can you check stock for SKU-990 and estimate shipping 2.5 kg to CA?"}
            ],
        }
    ]
    # The model's signed call parts come back verbatim before the results.
    assert second.body["contents"][1]["parts"][0]["thoughtSignature"]
    history = asyncio.run(namespace["store"].load("customer-turn-42"))
    assert [type(m).__name__ for m in history] == [
        "UserMessage", "AssistantMessage", "ToolResult", "ToolResult", "AssistantMessage",
    ]  # fmt: skip


def test_the_pitfall_block_runs_and_an_unannotated_parameter_is_a_string() -> None:
    namespace, snapshots = run_block(5)
    untyped = snapshots[0]["repeat_phrase"]
    typed = namespace["repeat_phrase"]
    untyped_props = untyped.to_gemini_declaration()["parameters"]["properties"]
    typed_props = typed.to_gemini_declaration()["parameters"]["properties"]
    assert untyped_props["count"] == {"type": "STRING"}
    assert typed_props["count"] == {"type": "INTEGER"}
    assert typed.execute(phrase="ab", count=2) == "abab"


def test_the_injected_tool_result_shown_in_the_seed_is_a_valid_tool_result() -> None:
    text = SEED.read_text(encoding="utf-8")
    match = re.search(r"#\s*(ToolResult\(.*\))\s*$", text, re.MULTILINE)
    assert match is not None
    result = eval(match.group(1), {"ToolResult": ToolResult})
    assert result == ToolResult(
        "call_123", "query_db", "Database connection timeout", is_error=True
    )


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_every_seed_block_parses_as_python(index: int) -> None:
    ast.parse(BLOCKS[index].source)

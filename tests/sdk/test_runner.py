"""The Runner loop against each fake provider: tool calls, parallel calls, failures, limits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatflow_agent import Agent, Runner, ToolResult, tool
from chatflow_agent.core.memory import SessionStore
from chatflow_agent.errors import MaxTurnsExceeded, ProviderHTTPError
from tests.sdk.fakes import FAKE_KEY, ProviderFake, Recorded, Reply


@tool
def check_inventory(sku: str) -> dict[str, Any]:
    """Check stock availability for a product SKU."""
    return {"sku": sku, "in_stock": True}


@tool
def calculate_shipping(weight_kg: float, destination: str) -> dict[str, Any]:
    """Calculate a shipping estimate."""
    return {"destination": destination.upper(), "cost_usd": round(weight_kg * 8.5, 2)}


@tool
def query_db(sql: str) -> list[str]:
    """Run a read-only query."""
    raise TimeoutError("Database connection timeout")


def make_runner(fake: ProviderFake, *tools: Any, **agent_options: Any) -> Runner:
    agent = Agent(
        name="Logistics",
        instructions="Help with logistics.",
        tools=tools or [check_inventory, calculate_shipping, query_db],
        model=fake.model,
        **agent_options,
    )
    return Runner(starting_agent=agent, session_store=SessionStore())


def test_a_plain_answer_needs_one_request_and_runs_no_tools(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(fake_provider.text("Hello!"))
    result = make_runner(fake_provider).run(session_id="s", user_message="hi")
    assert (result.content, result.tool_calls_executed, result.turns) == ("Hello!", [], 1)
    (request,) = fake_provider.server.requests
    assert fake_provider.declared_tools(request) == [
        "check_inventory",
        "calculate_shipping",
        "query_db",
    ]


def test_a_tool_call_runs_and_its_result_goes_back_to_the_model(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("check_inventory", {"sku": "SKU-1"})),
        fake_provider.text("It is in stock."),
    )
    result = make_runner(fake_provider).run(session_id="s", user_message="stock of SKU-1?")
    assert result.content == "It is in stock."
    assert result.tool_calls_executed == ["check_inventory"]
    assert result.tool_results[0].is_error is False
    (seen,) = fake_provider.tool_results(fake_provider.server.requests[1])
    assert seen.name == "check_inventory" and not seen.is_error
    assert "SKU-1" in str(seen.content)


def test_parallel_calls_in_one_turn_run_concurrently_and_return_together(
    fake_provider: ProviderFake,
) -> None:
    ping_seen, pong_seen = asyncio.Event(), asyncio.Event()

    @tool
    async def ping() -> str:
        ping_seen.set()
        await asyncio.wait_for(pong_seen.wait(), 10)  # only returns if pong runs meanwhile
        return "ping done"

    @tool
    async def pong() -> str:
        pong_seen.set()
        await asyncio.wait_for(ping_seen.wait(), 10)
        return "pong done"

    fake_provider.server.script(
        fake_provider.calls(("ping", {}), ("pong", {})), fake_provider.text("both done")
    )
    result = asyncio.run(make_runner(fake_provider, ping, pong).run_async("s", "go"))
    assert result.tool_calls_executed == ["ping", "pong"]
    seen = fake_provider.tool_results(fake_provider.server.requests[1])
    assert [s.name for s in seen] == ["ping", "pong"]
    assert ["done" in str(s.content) for s in seen] == [True, True]


def test_the_loop_goes_on_for_several_model_turns(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.calls(("check_inventory", {"sku": "A"})),
        fake_provider.calls(("calculate_shipping", {"weight_kg": 2, "destination": "ca"})),
        fake_provider.text("Ships for $17."),
    )
    result = make_runner(fake_provider).run(session_id="s", user_message="ship A")
    assert result.tool_calls_executed == ["check_inventory", "calculate_shipping"]
    assert result.turns == 3
    assert result.tool_results[1].data == {"destination": "CA", "cost_usd": 17.0}
    assert len(fake_provider.server.requests) == 3


def test_a_tool_that_raises_is_reported_to_the_model_which_goes_on(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("query_db", {"sql": "select 1"})),
        fake_provider.text("The database is down; I'll hand you to a human."),
    )
    result = make_runner(fake_provider).run(session_id="s", user_message="query")
    assert result.content == "The database is down; I'll hand you to a human."
    (failure,) = result.tool_results
    assert (failure.name, failure.content, failure.is_error) == (
        "query_db", "Database connection timeout", True,
    )  # fmt: skip
    (seen,) = fake_provider.tool_results(fake_provider.server.requests[1])
    assert seen.is_error and "Database connection timeout" in str(seen.content)


def test_invalid_arguments_and_unknown_tools_come_back_as_errors(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.calls(
            ("calculate_shipping", {"weight_kg": "heavy", "destination": "CA"}),
            ("teleport", {"to": "moon"}),
        ),
        fake_provider.text("Sorry."),
    )
    result = make_runner(fake_provider).run(session_id="s", user_message="ship")
    bad_args, unknown = result.tool_results
    assert bad_args.is_error and "weight_kg" in bad_args.content
    assert unknown.is_error and "Unknown tool 'teleport'" in unknown.content
    assert [s.is_error for s in fake_provider.tool_results(fake_provider.server.requests[1])] == [
        True, True,
    ]  # fmt: skip


def test_a_model_that_never_stops_calling_tools_hits_the_turn_limit(
    fake_provider: ProviderFake,
) -> None:
    looping = [fake_provider.calls(("check_inventory", {"sku": "A"})) for _ in range(3)]
    fake_provider.server.script(*looping)
    runner = make_runner(fake_provider, max_turns=3)
    with pytest.raises(MaxTurnsExceeded, match="3 turns"):
        runner.run(session_id="s", user_message="loop")
    assert len(fake_provider.server.requests) == 3


def test_a_session_remembers_earlier_turns(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(
        fake_provider.calls(("check_inventory", {"sku": "A"})),
        fake_provider.text("In stock."),
        fake_provider.text("You asked about A."),
    )
    runner = make_runner(fake_provider)
    runner.run(session_id="s1", user_message="stock of A?")
    result = runner.run(session_id="s1", user_message="what did I ask?")
    assert result.content == "You asked about A."
    third = fake_provider.server.requests[2].body
    history = third.get("contents") or third["messages"]
    assert len(history) >= 4
    assert "stock of A?" in str(history) and "what did I ask?" in str(history)


def test_run_works_from_inside_a_running_event_loop(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(fake_provider.text("ok"))
    runner = make_runner(fake_provider)

    async def caller() -> str | None:
        return runner.run(session_id="s", user_message="hi").content

    assert asyncio.run(caller()) == "ok"


def test_a_provider_client_error_is_raised_clearly_and_without_the_key(
    fake_provider: ProviderFake,
) -> None:
    message = f"API key {FAKE_KEY} is not valid"
    fake_provider.server.script(Reply({"error": {"message": message}}, status=401))
    with pytest.raises(ProviderHTTPError) as caught:
        make_runner(fake_provider).run(session_id="s", user_message="hi")
    assert caught.value.status_code == 401
    assert caught.value.provider == fake_provider.family
    assert "HTTP 401" in str(caught.value) and "is not valid" in str(caught.value)
    assert FAKE_KEY not in str(caught.value)


def test_a_provider_server_error_is_retried_then_reported(fake_provider: ProviderFake) -> None:
    from chatflow_agent.providers import provider_for_model

    provider = provider_for_model(fake_provider.model)
    provider.retry_backoff = 0
    overloaded = Reply({"error": {"message": "overloaded"}}, status=503)
    fake_provider.server.script(
        overloaded, fake_provider.text("recovered"), overloaded, overloaded, overloaded
    )
    runner = make_runner(fake_provider, provider=provider)
    assert runner.run(session_id="s", user_message="hi").content == "recovered"
    with pytest.raises(ProviderHTTPError, match="HTTP 503: overloaded"):
        runner.run(session_id="s", user_message="again")
    assert len(fake_provider.server.requests) == 5


def test_a_failed_run_leaves_the_session_untouched(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(Reply({"error": {"message": "bad request"}}, status=400))
    runner = make_runner(fake_provider)
    with pytest.raises(ProviderHTTPError):
        runner.run(session_id="s", user_message="hi")
    assert asyncio.run(runner.session_store.load("s")) == []


def test_the_seed_error_example_is_exactly_what_gets_injected(openai_fake: ProviderFake) -> None:
    openai_fake.server.script(
        openai_fake.calls(("query_db", {"sql": "select 1"}), ids=("call_123",)),  # type: ignore[call-arg]
        openai_fake.text("Sorry, the database timed out."),
    )
    result = make_runner(openai_fake).run(session_id="s", user_message="q")
    assert result.tool_results == [
        ToolResult(tool_call_id="call_123", name="query_db",
                   content="Database connection timeout", is_error=True),
    ]  # fmt: skip


def _echo_tool_names(fake: ProviderFake) -> Any:
    def answer(request: Recorded) -> Reply:
        return fake.text(",".join(fake.declared_tools(request)))

    return answer


def test_a_fake_can_answer_from_the_request_it_received(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(_echo_tool_names(fake_provider))
    result = make_runner(fake_provider, check_inventory).run(session_id="s", user_message="?")
    assert result.content == "check_inventory"

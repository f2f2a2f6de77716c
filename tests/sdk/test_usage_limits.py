"""UsageLimits, as pydantic-ai's: a run stops with the usage so far, on each fake provider."""

from __future__ import annotations

import pytest

from chatflow_agent import Agent, Runner, Usage, UsageLimitExceeded, UsageLimits, tool
from tests.sdk.fakes import ProviderFake


@tool
def lookup(code: str) -> str:
    """Look a code up."""
    return f"{code} ok"


def test_a_request_limit_stops_the_run_before_the_request_over_it(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    agent = Agent("a", tools=[lookup], model=fake_provider.model,
                  usage_limits=UsageLimits(request_limit=1))  # fmt: skip

    with pytest.raises(UsageLimitExceeded, match="request_limit=1") as info:
        Runner(agent).run("s", "go")

    # Each fake reports 10 input and 5 output tokens per call.
    assert info.value.usage == Usage(input_tokens=10, output_tokens=5, total_tokens=15, requests=1)


def test_a_per_run_token_limit_replaces_the_agent_s_and_carries_the_usage(
    fake_provider: ProviderFake,
) -> None:
    fake_provider.server.script(
        fake_provider.calls(("lookup", {"code": "A"})), fake_provider.text("done")
    )
    agent = Agent("a", tools=[lookup], model=fake_provider.model,
                  usage_limits=UsageLimits(request_limit=1))  # fmt: skip

    with pytest.raises(UsageLimitExceeded, match="output_tokens_limit=9") as info:
        Runner(agent).run("s", "go", usage_limits=UsageLimits(output_tokens_limit=9))

    assert info.value.usage.requests == 2
    assert info.value.usage.output_tokens == 10


def test_a_run_within_its_limits_finishes(fake_provider: ProviderFake) -> None:
    fake_provider.server.script(fake_provider.text("done"))
    limits = UsageLimits(request_limit=1, input_tokens_limit=10, total_tokens_limit=15)
    result = Runner(Agent("a", model=fake_provider.model)).run("s", "hi", usage_limits=limits)
    assert result.content == "done"


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_a_limit_that_is_not_a_whole_number_of_at_least_one_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="request_limit"):
        UsageLimits(request_limit=bad)  # type: ignore[arg-type]

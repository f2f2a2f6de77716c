"""Methods, local types, aliases and event loops: tools used the way Python code is written."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import TypedDict

import pytest
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

import chatflow_agent
from chatflow_agent import Agent, Runner, Tool, ToolExecutionError, ToolSchemaError, tool
from chatflow_agent.errors import ProviderError
from chatflow_agent.providers import OpenAIProvider, provider_family
from tests.sdk.fakes import FAKE_KEY, ProviderFake, Recorded, Reply


class Svc:
    def __init__(self, factor: int) -> None:
        self.factor = factor

    @tool
    def mul(self, n: int) -> int:
        """Multiply by the service's factor."""
        return n * self.factor

    @tool
    @classmethod
    def kind(cls, label: str) -> str:
        """Name the class."""
        return f"{cls.__name__}:{label}"

    @tool
    @staticmethod
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @classmethod
    @tool
    def label(cls, text: str) -> str:
        """Label a text with the class (classmethod above @tool)."""
        return f"{cls.__name__}/{text}"

    @staticmethod
    @tool
    def sub(a: int, b: int) -> int:
        """Subtract (staticmethod above @tool)."""
        return a - b


def test_a_method_tool_leaves_self_out_and_runs_bound_to_its_instance() -> None:
    svc = Svc(3)
    assert svc.mul.execute(n=2) == 6
    assert svc.mul(4) == 12
    assert list(svc.mul.to_openai_parameters()["properties"]) == ["n"]
    assert list(Svc.mul.to_gemini_declaration()["parameters"]["properties"]) == ["n"]
    assert Svc(5).mul.execute(n=2) == 10  # each instance its own binding


def test_classmethod_and_staticmethod_tools_work_from_class_and_instance() -> None:
    assert Svc.kind.execute(label="x") == "Svc:x" == Svc(1).kind.execute(label="x")
    assert list(Svc.kind.to_openai_parameters()["properties"]) == ["label"]
    assert Svc.add.execute(a=1, b=2) == 3 == Svc(1).add.execute(a=1, b=2)
    assert list(Svc.add.to_openai_parameters()["properties"]) == ["a", "b"]


def test_classmethod_and_staticmethod_above_the_decorator_work_too() -> None:
    assert Svc.label.execute(text="x") == "Svc/x" == Svc(1).label.execute(text="x")
    assert list(Svc.label.to_openai_parameters()["properties"]) == ["text"]
    assert Svc.sub.execute(a=3, b=1) == 2 == Svc(1).sub.execute(a=3, b=1)
    assert list(Svc.sub.to_gemini_declaration()["parameters"]["properties"]) == ["a", "b"]


def test_a_method_read_from_its_class_cannot_run_and_an_agent_refuses_it() -> None:
    with pytest.raises(ToolExecutionError, match="is a method"):
        Svc.mul.execute(n=1)
    with pytest.raises(ToolSchemaError, match="from an instance"):
        Agent("a", tools=[Svc.mul])


def test_a_bound_method_tool_runs_in_an_agent(openai_fake: ProviderFake) -> None:
    openai_fake.server.script(openai_fake.calls(("mul", {"n": 7})), openai_fake.text("21"))
    result = Runner(Agent("a", tools=[Svc(3).mul], model=openai_fake.model)).run("s", "7*3?")
    assert result.tool_results[0].data == 21


def test_a_tool_stored_on_a_class_stays_the_function_it_was() -> None:
    def double(n: int) -> int:
        return n * 2

    class Toolbox:
        twice = Tool(double)

    assert Toolbox.twice.execute(n=2) == 4 == Toolbox().twice.execute(n=2)


def test_types_defined_inside_a_function_resolve_under_future_annotations() -> None:
    @dataclass
    class Item:
        sku: str

    class Basket(TypedDict):
        items: list[Item]

    @tool
    def checkout(basket: Basket, first: Item) -> int:
        return len(basket["items"])

    props = checkout.to_openai_parameters()["properties"]
    assert props["first"]["properties"] == {"sku": {"type": "string"}}
    assert checkout.execute(basket={"items": [{"sku": "A"}]}, first={"sku": "B"}) == 1


def test_types_defined_inside_a_function_resolve_for_a_tool_built_directly() -> None:
    @dataclass
    class Point:
        x: int

    def norm(p: Point) -> int:
        return abs(p.x)

    assert Tool(norm).execute(p={"x": -3}) == 3


class Account(BaseModel):
    user_id: int = Field(validation_alias="userId")
    region: str = Field("eu", validation_alias=AliasChoices("regionCode", "region"))
    plan: str = Field("free", alias="planName")


def test_the_advertised_name_of_a_field_is_the_name_validation_accepts() -> None:
    @tool
    def open_account(account: Account) -> Account:
        return account

    props = open_account.to_openai_parameters()["properties"]["account"]["properties"]
    assert list(props) == ["userId", "regionCode", "planName"]
    sent = {"userId": 3, "regionCode": "us", "planName": "pro"}
    assert open_account.execute(account=sent) == Account(userId=3, regionCode="us", planName="pro")
    gemini = open_account.to_gemini_declaration()["parameters"]["properties"]["account"]
    assert gemini["required"] == ["userId"]


class ByName(BaseModel):
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=False)
    user_id: int = Field(validation_alias="userId")


def test_a_model_validated_by_name_advertises_the_field_name() -> None:
    @tool
    def who(account: ByName) -> int:
        return account.user_id

    props = who.to_openai_parameters()["properties"]["account"]["properties"]
    assert list(props) == ["user_id"]
    assert who.execute(account={"user_id": 4}) == 4


async def test_execute_inside_a_running_loop_warns_once_and_explains_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    # chatflow_agent.tools.tool is also the decorator's name; fetch the module itself.
    tool_module = importlib.import_module("chatflow_agent.tools.tool")
    monkeypatch.setattr(tool_module, "_warned_in_loop", False)
    ready = asyncio.Event()

    @tool
    async def wait_until_ready() -> str:
        await asyncio.wait_for(ready.wait(), 0.2)
        return "ready"

    with pytest.warns(RuntimeWarning, match="execute_async"), pytest.raises(ToolExecutionError) as caught:
        wait_until_ready.execute()
    message = str(caught.value)
    assert not message.rstrip().endswith(":")
    assert "TimeoutError" in message and "execute_async" in message
    ready.set()
    assert await wait_until_ready.execute_async() == "ready"


def test_an_exception_without_a_message_is_named_without_a_dangling_colon() -> None:
    @tool
    def silent() -> None:
        raise TimeoutError

    with pytest.raises(ToolExecutionError) as caught:
        silent.execute()
    assert str(caught.value) == "tool 'silent' raised TimeoutError"


def test_a_provider_that_never_answers_is_reported_with_a_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        provider = OpenAIProvider(api_key=FAKE_KEY, base_url=f"http://127.0.0.1:{port}/v1",
                                  max_retries=0)  # fmt: skip
        runner = Runner(Agent("a", model="gpt-4o", provider=provider), timeout=0.2)
        with pytest.raises(ProviderError) as caught:
            runner.run(session_id="s", user_message="hi")
    message = str(caught.value)
    assert message.startswith("openai could not be reached: ReadTimeout")
    assert FAKE_KEY not in message


@pytest.mark.parametrize(
    "model", ["chatgpt-4o-latest", "ft:gpt-4o-mini-2024-07-18:acme::abc123", "ft:o4-mini:acme::x"]
)
def test_chatgpt_and_fine_tuned_model_names_go_to_openai(model: str) -> None:
    assert provider_family(model) == "openai"


def test_o1_mini_gets_its_instructions_without_a_system_or_developer_role(
    openai_fake: ProviderFake,
) -> None:
    def answer(request: Recorded) -> Reply:
        return openai_fake.text(str(request.body["messages"][0]))

    openai_fake.server.script(answer)
    agent = Agent("a", "Be brief.", model="o1-mini")
    result = Runner(agent).run(session_id="s", user_message="hi")
    assert result.content == str({"role": "user", "content": "Be brief."})


def test_max_turns_exceeded_is_importable_from_the_package() -> None:
    from chatflow_agent import MaxTurnsExceeded

    assert MaxTurnsExceeded is chatflow_agent.errors.MaxTurnsExceeded

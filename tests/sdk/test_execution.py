"""Running tools: threads, event loops, argument validation and error wrapping."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import Field

from chatflow_agent import Tool, ToolExecutionError, tool
from chatflow_agent.errors import SettingsError, ToolArgumentsError
from chatflow_agent.settings import TOOL_THREADS, tool_threads
from chatflow_agent.tools import configure_tool_threads

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


@tool
def where_am_i() -> dict[str, Any]:
    return {"thread": threading.current_thread().name, "request": request_id.get()}


@tool
async def where_am_i_async() -> int:
    return threading.get_ident()


@tool
def count(n: int) -> int:
    return n


@tool
def fails(reason: str) -> None:
    raise TimeoutError(reason)


@pytest.fixture
def two_tool_threads() -> Iterator[None]:
    configure_tool_threads(2)
    yield
    configure_tool_threads(8)


async def test_async_tools_are_awaited_on_the_running_loop() -> None:
    assert await where_am_i_async.execute_async() == threading.get_ident()


async def test_sync_tools_run_on_the_tool_pool_and_keep_context_variables() -> None:
    request_id.set("req-7")
    seen = await where_am_i.execute_async()
    assert seen["thread"].startswith("chatflow-tool")
    assert seen["request"] == "req-7"


async def test_the_tool_pool_is_bounded_by_its_configured_size(two_tool_threads: None) -> None:
    lock = threading.Lock()
    active = 0
    peak = 0
    names: set[str] = set()
    pair = threading.Barrier(2, timeout=10)

    @tool
    def occupy(i: int) -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            names.add(threading.current_thread().name)
        pair.wait()  # two at a time meet here; a third thread would only raise the peak
        with lock:
            active -= 1
        return i

    results = await asyncio.gather(*(occupy.execute_async(i=i) for i in range(6)))
    assert results == list(range(6))
    assert peak == 2
    assert len(names) == 2


def test_execute_runs_a_sync_tool_right_here() -> None:
    assert where_am_i.execute()["thread"] == threading.current_thread().name


def test_execute_runs_an_async_tool_outside_any_loop() -> None:
    assert where_am_i_async.execute() == threading.get_ident()


@pytest.mark.filterwarnings("ignore:Tool.execute\\(\\) was called inside a running event loop")
async def test_execute_runs_an_async_tool_even_inside_a_running_loop() -> None:
    worker = where_am_i_async.execute()
    assert worker != threading.get_ident()


@pytest.mark.parametrize(("sent", "received"), [(3, 3), (3.0, 3), (-2.0, -2)])
def test_an_int_parameter_accepts_integral_numbers(sent: Any, received: int) -> None:
    value = count.execute(n=sent)
    assert value == received and type(value) is int


@pytest.mark.parametrize("sent", [3.5, "3", True, None, [3]])
def test_an_int_parameter_coerces_nothing_else(sent: Any) -> None:
    with pytest.raises(ToolArgumentsError, match=r"\bn: "):
        count.execute(n=sent)


@pytest.mark.parametrize(
    ("annotation", "sent"),
    [(str, 3), (bool, "true"), (bool, 1), (float, "1.5"), (list[int], "1,2"), (Literal["a"], "b")],
)
def test_other_types_are_validated_strictly(annotation: Any, sent: Any) -> None:
    def probe(x):  # type: ignore[no-untyped-def]
        return x

    probe.__annotations__ = {"x": annotation}
    with pytest.raises(ToolArgumentsError):
        Tool(probe, name="probe").execute(x=sent)


def test_missing_and_unexpected_arguments_are_rejected_before_the_tool_runs() -> None:
    with pytest.raises(ToolArgumentsError, match="missing required argument 'n'"):
        count.execute()
    with pytest.raises(ToolArgumentsError, match=r"unexpected argument.*extra"):
        count.execute(n=1, extra=2)


def test_argument_errors_are_execution_errors_too() -> None:
    assert issubclass(ToolArgumentsError, ToolExecutionError)


def test_an_exception_inside_a_tool_becomes_a_chained_tool_execution_error() -> None:
    with pytest.raises(ToolExecutionError, match="Database connection timeout") as caught:
        fails.execute(reason="Database connection timeout")
    assert isinstance(caught.value.__cause__, TimeoutError)
    assert caught.value.tool_name == "fails"


async def test_an_exception_inside_an_async_call_is_wrapped_the_same_way() -> None:
    @tool
    async def broken() -> None:
        raise ValueError("bad state")

    with pytest.raises(ToolExecutionError) as caught:
        await broken.execute_async()
    assert isinstance(caught.value.__cause__, ValueError)
    with pytest.raises(ToolExecutionError):
        await fails.execute_async(reason="x")


def test_field_defaults_and_default_factories_are_resolved_when_omitted() -> None:
    @tool
    def page(size: int = Field(20, ge=1), tags: list[str] = Field(default_factory=list)) -> Any:  # noqa: B008
        return size, tags

    assert page.execute() == (20, [])
    with pytest.raises(ToolArgumentsError):
        page.execute(size=0)


def test_positional_only_parameters_are_passed_positionally() -> None:
    def double(x: int, /) -> int:
        return x * 2

    assert Tool(double).execute(x=4) == 8


def test_extra_keyword_arguments_reach_a_function_that_takes_kwargs() -> None:
    @tool
    def collect(a: int, **rest: Any) -> dict[str, Any]:
        return {"a": a, **rest}

    assert collect.execute(a=1, b=2) == {"a": 1, "b": 2}


@dataclass
class Point:
    x: int
    y: int


def test_python_callers_may_pass_python_objects() -> None:
    @tool
    def norm(p: Point, shape: tuple[int, ...]) -> int:
        return abs(p.x) + abs(p.y) + len(shape)

    assert norm.execute(p=Point(1, -2), shape=(1, 2)) == 5
    assert norm.execute(p={"x": 1, "y": 1}, shape=[1]) == 3


# ------------------------------------------------------------- model dialects


@dataclass
class Shipment:
    weight: float
    express: bool = False


@tool
def quote(destination: str, rate: float = 0.2, note: str | None = "n/a",
          shipment: Shipment | None = None) -> Any:  # fmt: skip
    return rate, note, shipment


def test_null_from_a_model_restores_a_non_none_default() -> None:
    arguments = quote.bind_model_arguments({"destination": "CA", "rate": None}, gemini=False)
    assert quote.execute(**arguments) == (0.2, "n/a", None)


def test_null_from_a_model_for_a_nullable_parameter_means_none() -> None:
    arguments = quote.bind_model_arguments({"destination": "CA", "note": None}, gemini=False)
    assert quote.execute(**arguments) == (0.2, None, None)


def test_null_inside_a_nested_object_restores_the_field_default() -> None:
    sent = {"destination": "CA", "shipment": {"weight": 2, "express": None}}
    arguments = quote.bind_model_arguments(sent, gemini=False)
    assert quote.execute(**arguments)[2] == Shipment(weight=2.0, express=False)


def test_a_direct_call_with_null_for_a_non_nullable_parameter_is_rejected() -> None:
    with pytest.raises(ToolArgumentsError):
        quote.execute(destination="CA", rate=None)


def test_gemini_string_enums_get_their_python_type_back() -> None:
    @tool
    def pick(level: Literal[1, 2, 3], flag: Literal[True, "maybe"] = "maybe") -> Any:
        return level, flag

    arguments = pick.bind_model_arguments({"level": "2", "flag": "true"}, gemini=True)
    assert pick.execute(**arguments) == (2, True)
    # The same strings from a JSON Schema dialect model are simply wrong.
    arguments = pick.bind_model_arguments({"level": "2"}, gemini=False)
    with pytest.raises(ToolArgumentsError):
        pick.execute(**arguments)


def test_the_tool_thread_count_comes_from_the_sdk_settings_and_a_bad_one_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOOL_THREADS, raising=False)
    assert tool_threads(6) == 6
    monkeypatch.setenv(TOOL_THREADS, " 3 ")
    assert tool_threads(6) == 3
    for bad in ("many", "0", "-2"):
        monkeypatch.setenv(TOOL_THREADS, bad)
        with pytest.raises(SettingsError, match=f"CHATFLOW_AGENT_TOOL_THREADS.*{bad!r}"):
            tool_threads(6)

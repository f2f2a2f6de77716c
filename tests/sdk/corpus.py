"""The schema corpus: signatures, and what each dialect must say about their parameter ``x``.

Each case pins the property schema of ``x`` in the Gemini, JSON Schema and OpenAI
strict dialects, whether ``x`` is required, and a value a model might send
together with what the function must receive for it.
"""

from __future__ import annotations

import datetime
import enum
import inspect
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict

import annotated_types as at
from pydantic import BaseModel, Field

from chatflow_agent import Tool

STRICT_ERROR: Any = object()
SAME: Any = object()


def probe(
    annotation: Any = inspect.Parameter.empty, default: Any = inspect.Parameter.empty
) -> Callable[..., Any]:
    """A one-parameter function ``probe(x: annotation = default) -> x``."""

    def probe(x):  # type: ignore[no-untyped-def]
        return x

    if annotation is not inspect.Parameter.empty:
        probe.__annotations__ = {"x": annotation}
    if default is not inspect.Parameter.empty:
        probe.__defaults__ = (default,)
    return probe


@dataclass(frozen=True)
class Case:
    id: str
    func: Callable[..., Any]
    gemini: dict[str, Any]
    json: dict[str, Any]
    strict: dict[str, Any]
    sample: Any
    received: Any = SAME
    required: bool = True
    gemini_sample: Any = SAME

    @property
    def tool(self) -> Tool[..., Any]:
        return Tool(self.func, name="probe")

    @property
    def expected(self) -> Any:
        return self.sample if self.received is SAME else self.received


class Color(str, enum.Enum):  # noqa: UP042 - the spelling most tool authors use
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Dims(TypedDict):
    width: float
    height: float


class Filters(TypedDict, total=False):
    color: str
    size: int


@dataclass
class Address:
    """A postal address."""

    street: str
    country: str = "US"


class Order(BaseModel):
    sku: str = Field(description="Product SKU")
    quantity: int = Field(1, ge=1)


UserId = NewType("UserId", int)


def variadic(x: int, *args: int, **kwargs: str) -> int:
    return x


def positional_only(x: int, /) -> int:
    return x


def keyword_only(*, x: str) -> str:
    return x


def _null(schema: dict[str, Any], **outer: Any) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}], **outer}


_DIMS_G = {
    "type": "OBJECT",
    "properties": {"width": {"type": "NUMBER"}, "height": {"type": "NUMBER"}},
    "required": ["width", "height"],
    "propertyOrdering": ["width", "height"],
}
_DIMS_J = {
    "type": "object",
    "properties": {"width": {"type": "number"}, "height": {"type": "number"}},
    "required": ["width", "height"],
}
_ADDRESS_G = {
    "type": "OBJECT",
    "description": "A postal address.",
    "properties": {"street": {"type": "STRING"}, "country": {"type": "STRING"}},
    "required": ["street"],
    "propertyOrdering": ["street", "country"],
}
_ADDRESS_CORE_J = {
    "type": "object",
    "properties": {"street": {"type": "string"}, "country": {"type": "string", "default": "US"}},
    "required": ["street"],
}
_ADDRESS_CORE_S = {
    "type": "object",
    "properties": {"street": {"type": "string"}, "country": _null({"type": "string"})},
    "required": ["street", "country"],
    "additionalProperties": False,
}
_ADDRESS_J = {**_ADDRESS_CORE_J, "description": "A postal address."}
_ADDRESS_S = {**_ADDRESS_CORE_S, "description": "A postal address."}


def _entries(value: dict[str, Any]) -> dict[str, Any]:
    """Gemini's declaration of dict[str, T]: the Developer API refuses additionalProperties."""
    return {"type": "ARRAY", "items": {
        "type": "OBJECT", "description": "One entry of a mapping: a key and its value.",
        "properties": {"key": {"type": "STRING"}, "value": value},
        "required": ["key", "value"], "propertyOrdering": ["key", "value"]}}  # fmt: skip


def _scalar(kind: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return {"type": kind.upper()}, {"type": kind}, {"type": kind}


CORPUS: list[Case] = [
    # primitives, and the no-annotation rule
    Case("str", probe(str), *_scalar("string"), sample="hi"),
    Case("int", probe(int), *_scalar("integer"), sample=3),
    Case("int accepts an integral float", probe(int), *_scalar("integer"), sample=3.0, received=3),
    Case("float", probe(float), *_scalar("number"), sample=2.5),
    Case("bool", probe(bool), *_scalar("boolean"), sample=True),
    Case("no annotation is a string", probe(), *_scalar("string"), sample="5"),
    Case("no annotation with a default", probe(default=3), {"type": "STRING"}, {"type": "string"},
         _null({"type": "string"}), sample="x", required=False),
    # defaults make parameters optional
    Case("float with default", probe(float, 0.2), {"type": "NUMBER"},
         {"type": "number", "default": 0.2}, _null({"type": "number"}), sample=0.5, required=False),
    Case("bool with default", probe(bool, False), {"type": "BOOLEAN"},
         {"type": "boolean", "default": False}, _null({"type": "boolean"}), sample=True,
         required=False),
    Case("optional list defaulting to None", probe(Optional[list[int]], None),  # noqa: UP045
         {"type": "ARRAY", "items": {"type": "INTEGER"}, "nullable": True},
         {**_null({"type": "array", "items": {"type": "integer"}}), "default": None},
         _null({"type": "array", "items": {"type": "integer"}}), sample=None, required=False),
    # collections carry their item schema
    Case("list of floats", probe(list[float]), {"type": "ARRAY", "items": {"type": "NUMBER"}},
         {"type": "array", "items": {"type": "number"}},
         {"type": "array", "items": {"type": "number"}}, sample=[1, 2.5], received=[1.0, 2.5]),
    Case("typing.List", probe(typing.List[int]),  # noqa: UP006
         {"type": "ARRAY", "items": {"type": "INTEGER"}},
         {"type": "array", "items": {"type": "integer"}},
         {"type": "array", "items": {"type": "integer"}}, sample=[1, 2]),
    Case("Sequence", probe(Sequence[str]), {"type": "ARRAY", "items": {"type": "STRING"}},
         {"type": "array", "items": {"type": "string"}},
         {"type": "array", "items": {"type": "string"}}, sample=["a"]),
    Case("set", probe(set[int]), {"type": "ARRAY", "items": {"type": "INTEGER"}},
         {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
         {"type": "array", "items": {"type": "integer"}}, sample=[1, 2], received={1, 2}),
    Case("frozenset", probe(frozenset[str]), {"type": "ARRAY", "items": {"type": "STRING"}},
         {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
         {"type": "array", "items": {"type": "string"}}, sample=["a"], received=frozenset({"a"})),
    Case("homogeneous tuple", probe(tuple[int, ...]),
         {"type": "ARRAY", "items": {"type": "INTEGER"}},
         {"type": "array", "items": {"type": "integer"}},
         {"type": "array", "items": {"type": "integer"}}, sample=[1, 2], received=(1, 2)),
    Case("fixed tuple", probe(tuple[int, str]),
         {"type": "ARRAY", "items": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
          "minItems": 2, "maxItems": 2},
         {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
          "minItems": 2, "maxItems": 2},
         {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
          "minItems": 2, "maxItems": 2}, sample=[1, "a"], received=(1, "a")),
    Case("fixed pair of floats", probe(tuple[float, float]),
         {"type": "ARRAY", "items": {"type": "NUMBER"}, "minItems": 2, "maxItems": 2},
         {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
         {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
         sample=[1.5, 2.5], received=(1.5, 2.5)),
    Case("bare list", probe(list), {"type": "ARRAY", "items": {}},
         {"type": "array", "items": {}}, STRICT_ERROR, sample=[1, "a"]),
    Case("bare dict", probe(dict), {"type": "OBJECT"},
         {"type": "object", "additionalProperties": True}, STRICT_ERROR, sample={"a": 1}),
    Case("dict of ints", probe(dict[str, int]), _entries({"type": "INTEGER"}),
         {"type": "object", "additionalProperties": {"type": "integer"}}, STRICT_ERROR,
         sample={"a": 1}, gemini_sample=[{"key": "a", "value": 1.0}]),
    Case("Mapping of floats", probe(Mapping[str, float]), _entries({"type": "NUMBER"}),
         {"type": "object", "additionalProperties": {"type": "number"}}, STRICT_ERROR,
         sample={"a": 1.5}, gemini_sample=[{"key": "a", "value": 1.5}]),
    Case("dict of lists", probe(dict[str, list[str]]),
         _entries({"type": "ARRAY", "items": {"type": "STRING"}}),
         {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
         STRICT_ERROR, sample={"a": ["b"]}, gemini_sample=[{"key": "a", "value": ["b"]}]),
    Case("optional dict of ints", probe(dict[str, int] | None, None),
         {**_entries({"type": "INTEGER"}), "nullable": True},
         {**_null({"type": "object", "additionalProperties": {"type": "integer"}}),
          "default": None}, STRICT_ERROR, sample={"b": 2}, required=False,
         gemini_sample=[{"key": "b", "value": 2}]),
    Case("dict of ints or a string", probe(dict[str, int] | str),
         {"anyOf": [_entries({"type": "INTEGER"}), {"type": "STRING"}]},
         {"anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}},
                    {"type": "string"}]}, STRICT_ERROR, sample={"c": 3},
         gemini_sample=[{"key": "c", "value": 3}]),
    # unions
    Case("Optional", probe(Optional[int]), {"type": "INTEGER", "nullable": True},  # noqa: UP045
         _null({"type": "integer"}), _null({"type": "integer"}), sample=None),
    Case("T | None", probe(int | None), {"type": "INTEGER", "nullable": True},
         _null({"type": "integer"}), _null({"type": "integer"}), sample=4),
    Case("None | T", probe(None | str), {"type": "STRING", "nullable": True},
         _null({"type": "string"}), _null({"type": "string"}), sample="a"),
    Case("int | float", probe(int | float), *_scalar("number"), sample=2.5),
    Case("float | int", probe(float | int), *_scalar("number"), sample=2),
    Case("int | str", probe(int | str),
         {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
         {"anyOf": [{"type": "integer"}, {"type": "string"}]},
         {"anyOf": [{"type": "integer"}, {"type": "string"}]}, sample="a"),
    Case("int | float | str", probe(int | float | str),
         {"anyOf": [{"type": "NUMBER"}, {"type": "STRING"}]},
         {"anyOf": [{"type": "number"}, {"type": "string"}]},
         {"anyOf": [{"type": "number"}, {"type": "string"}]}, sample=1.5),
    Case("str | int | None", probe(str | int | None),
         {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": True},
         {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
         {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}, sample=7),
    Case("dataclass | str", probe(Address | str),
         {"anyOf": [_ADDRESS_G, {"type": "STRING"}]},
         {"anyOf": [_ADDRESS_J, {"type": "string"}]},
         {"anyOf": [_ADDRESS_S, {"type": "string"}]},
         sample={"street": "Main"}, received=Address("Main")),
    # enums: Gemini's are strings
    Case("Literal of strings", probe(Literal["a", "b"]),
         {"type": "STRING", "format": "enum", "enum": ["a", "b"]},
         {"type": "string", "enum": ["a", "b"]}, {"type": "string", "enum": ["a", "b"]},
         sample="b"),
    Case("Literal of ints", probe(Literal[1, 2, 3]),
         {"type": "STRING", "format": "enum", "enum": ["1", "2", "3"]},
         {"type": "integer", "enum": [1, 2, 3]}, {"type": "integer", "enum": [1, 2, 3]},
         sample=2, gemini_sample="2"),
    Case("Literal of mixed types", probe(Literal["x", 1]),
         {"type": "STRING", "format": "enum", "enum": ["x", "1"]},
         {"enum": ["x", 1]},
         {"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "integer", "enum": [1]}]},
         sample=1, gemini_sample="1"),
    Case("Literal of bools", probe(Literal[True, False]),
         {"type": "STRING", "format": "enum", "enum": ["true", "false"]},
         {"type": "boolean", "enum": [True, False]}, {"type": "boolean", "enum": [True, False]},
         sample=False, gemini_sample="false"),
    Case("Optional Literal", probe(Optional[Literal["a", "b"]]),  # noqa: UP045
         {"type": "STRING", "format": "enum", "enum": ["a", "b"], "nullable": True},
         _null({"type": "string", "enum": ["a", "b"]}),
         _null({"type": "string", "enum": ["a", "b"]}), sample=None),
    Case("str Enum", probe(Color),
         {"type": "STRING", "format": "enum", "enum": ["red", "green"]},
         {"type": "string", "enum": ["red", "green"]},
         {"type": "string", "enum": ["red", "green"]}, sample="red", received=Color.RED),
    Case("int Enum", probe(Priority),
         {"type": "STRING", "format": "enum", "enum": ["1", "2"]},
         {"type": "integer", "enum": [1, 2]}, {"type": "integer", "enum": [1, 2]},
         sample=2, received=Priority.HIGH, gemini_sample="2"),
    Case("Enum defaulting to None", probe(Color | None, None),
         {"type": "STRING", "format": "enum", "enum": ["red", "green"], "nullable": True},
         {**_null({"type": "string", "enum": ["red", "green"]}), "default": None},
         _null({"type": "string", "enum": ["red", "green"]}), sample="green",
         received=Color.GREEN, required=False),
    # nested objects, inlined
    Case("TypedDict", probe(Dims), _DIMS_G, _DIMS_J, {**_DIMS_J, "additionalProperties": False},
         sample={"width": 1.5, "height": 2.0}),
    Case("TypedDict with optional keys", probe(Filters),
         {"type": "OBJECT",
          "properties": {"color": {"type": "STRING"}, "size": {"type": "INTEGER"}},
          "propertyOrdering": ["color", "size"]},
         {"type": "object",
          "properties": {"color": {"type": "string"}, "size": {"type": "integer"}}},
         {"type": "object",
          "properties": {"color": _null({"type": "string"}), "size": _null({"type": "integer"})},
          "required": ["color", "size"], "additionalProperties": False},
         sample={"color": "red"}),
    Case("dataclass", probe(Address), _ADDRESS_G, _ADDRESS_J, _ADDRESS_S,
         sample={"street": "Main"}, received=Address("Main", "US")),
    Case("optional dataclass", probe(Address | None),
         {**_ADDRESS_G, "nullable": True}, _null(_ADDRESS_CORE_J, description="A postal address."),
         _null(_ADDRESS_CORE_S, description="A postal address."), sample=None),
    Case("list of dataclasses", probe(list[Address]),
         {"type": "ARRAY", "items": _ADDRESS_G}, {"type": "array", "items": _ADDRESS_J},
         {"type": "array", "items": _ADDRESS_S},
         sample=[{"street": "A", "country": "PT"}], received=[Address("A", "PT")]),
    Case("pydantic model", probe(Order),
         {"type": "OBJECT",
          "properties": {"sku": {"type": "STRING", "description": "Product SKU"},
                         "quantity": {"type": "INTEGER", "minimum": 1}},
          "required": ["sku"], "propertyOrdering": ["sku", "quantity"]},
         {"type": "object",
          "properties": {"sku": {"type": "string", "description": "Product SKU"},
                         "quantity": {"type": "integer", "minimum": 1, "default": 1}},
          "required": ["sku"]},
         {"type": "object",
          "properties": {"sku": {"type": "string", "description": "Product SKU"},
                         "quantity": _null({"type": "integer", "minimum": 1})},
          "required": ["sku", "quantity"], "additionalProperties": False},
         sample={"sku": "A", "quantity": 2.0}, received=Order(sku="A", quantity=2)),
    # Annotated constraints and descriptions carry over
    Case("Field bounds", probe(Annotated[int, Field(ge=1, le=10)]),
         {"type": "INTEGER", "minimum": 1, "maximum": 10},
         {"type": "integer", "minimum": 1, "maximum": 10},
         {"type": "integer", "minimum": 1, "maximum": 10}, sample=10),
    Case("Field string rules",
         probe(Annotated[str, Field(min_length=2, max_length=5, pattern="^[A-Z]+$")]),
         {"type": "STRING", "minLength": 2, "maxLength": 5, "pattern": "^[A-Z]+$"},
         {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[A-Z]+$"},
         {"type": "string", "pattern": "^[A-Z]+$"}, sample="ABC"),
    Case("exclusive int bound", probe(Annotated[int, at.Gt(0)]),
         {"type": "INTEGER", "minimum": 1}, {"type": "integer", "exclusiveMinimum": 0},
         {"type": "integer", "exclusiveMinimum": 0}, sample=1),
    Case("exclusive float bound", probe(Annotated[float, at.Lt(1.5)]),
         {"type": "NUMBER", "maximum": 1.5}, {"type": "number", "exclusiveMaximum": 1.5},
         {"type": "number", "exclusiveMaximum": 1.5}, sample=1.0),
    Case("multipleOf", probe(Annotated[int, at.MultipleOf(5)]),
         {"type": "INTEGER"}, {"type": "integer", "multipleOf": 5},
         {"type": "integer", "multipleOf": 5}, sample=10),
    Case("list length", probe(Annotated[list[int], at.Len(1, 3)]),
         {"type": "ARRAY", "items": {"type": "INTEGER"}, "minItems": 1, "maxItems": 3},
         {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
         {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
         sample=[1]),
    Case("Annotated text", probe(Annotated[str, "The customer's name"]),
         {"type": "STRING", "description": "The customer's name"},
         {"type": "string", "description": "The customer's name"},
         {"type": "string", "description": "The customer's name"}, sample="Ana"),
    Case("Field as default", probe(int, Field(3, description="How many", ge=0)),
         {"type": "INTEGER", "minimum": 0, "description": "How many"},
         {"type": "integer", "minimum": 0, "description": "How many", "default": 3},
         _null({"type": "integer", "minimum": 0}, description="How many"), sample=0,
         required=False),
    Case("Field without default", probe(str, Field(description="Ticker symbol")),
         {"type": "STRING", "description": "Ticker symbol"},
         {"type": "string", "description": "Ticker symbol"},
         {"type": "string", "description": "Ticker symbol"}, sample="AAPL"),
    # formats and aliases
    Case("datetime", probe(datetime.datetime), {"type": "STRING", "format": "date-time"},
         {"type": "string", "format": "date-time"}, {"type": "string", "format": "date-time"},
         sample="2024-05-01T10:00:00Z",
         received=datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.UTC)),
    Case("date", probe(datetime.date), {"type": "STRING"}, {"type": "string", "format": "date"},
         {"type": "string", "format": "date"}, sample="2024-05-01",
         received=datetime.date(2024, 5, 1)),
    Case("UUID", probe(uuid.UUID), {"type": "STRING"}, {"type": "string", "format": "uuid"},
         {"type": "string", "format": "uuid"}, sample="12345678-1234-5678-1234-567812345678",
         received=uuid.UUID("12345678-1234-5678-1234-567812345678")),
    Case("list of Any", probe(list[Any]), {"type": "ARRAY", "items": {}},
         {"type": "array", "items": {}}, STRICT_ERROR, sample=[{"anything": [1]}]),
    Case("NewType", probe(UserId), *_scalar("integer"), sample=7),
    # signature shapes: *args/**kwargs left out, positional-only and keyword-only kept
    Case("*args and **kwargs omitted", variadic, *_scalar("integer"), sample=1),
    Case("positional-only", positional_only, *_scalar("integer"), sample=1),
    Case("keyword-only", keyword_only, *_scalar("string"), sample="k"),
]  # fmt: skip

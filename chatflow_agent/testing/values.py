"""A value that fits a declared schema, for TestModel's tool calls and final answers.

It reads the schema as it went on the wire (JSON Schema for OpenAI and Anthropic,
Gemini's OpenAPI subset), so the arguments are the ones a model could send for
that very declaration. Values are plain and deterministic: ``"a"``, ``0``, the
first enum member, one item per list, every property of an object (optional
ones too, so their handling is exercised); a recursive type stops at a small depth.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ChatflowAgentError

# Deep enough to go through a recursive type more than once, small enough to read.
_RECURSION_DEPTH = 3
_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "12:00:00",
    "uuid": "12345678-1234-5678-1234-567812345678",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "duration": "P1D",
}
_PATTERN_CANDIDATES = (
    "a",
    "abc",
    "A",
    "ABC",
    "0",
    "1",
    "123",
    "a1",
    "A1",
    "abc123",
    "ABC-123",
    "AB-1234",
    "user@example.com",
    "2024-01-01",
    "https://example.com/",
    "a b",
)


class TestModelError(ChatflowAgentError):
    """Raised when a test model cannot do what a test asked of it; the message says what and why."""

    __test__ = False  # not a pytest test class, despite its name


class ValueBuilder:
    """Builds one value per schema; ``root`` holds the ``$defs`` that ``$ref``s point to."""

    def __init__(self, root: dict[str, Any], where: str) -> None:
        self._defs: dict[str, Any] = {**root.get("definitions", {}), **root.get("$defs", {})}
        self._where = where
        self._refs = 0

    def build(self, schema: Any, path: str = "", seed: int = 0) -> Any:
        if not isinstance(schema, dict) or not schema:
            return "a"  # any value will do
        if "$ref" in schema:
            return self._ref(str(schema["$ref"]), path, seed)
        if "anyOf" in schema or "oneOf" in schema:
            return self._union(schema.get("anyOf") or schema["oneOf"], path, seed)
        if "enum" in schema:
            values = [v for v in schema["enum"] if v is not None]
            return values[seed % len(values)] if values else None
        if "const" in schema:
            return schema["const"]
        kind = _kind(schema)
        if kind == "string":
            return self._string(schema, path, seed)
        if kind in ("integer", "number"):
            return self._number(schema, kind == "integer", seed)
        if kind == "boolean":
            return seed % 2 == 0
        if kind == "array":
            return self._array(schema, path, seed)
        if kind == "object":
            return self._object(schema, path, seed)
        if kind == "null":
            return None
        return "a"

    def _fail(self, path: str, message: str) -> TestModelError:
        return TestModelError(
            f"TestModel cannot build {self._where}{f' {path!r}' if path else ''}: {message}; "
            "give the values yourself with a FunctionModel"
        )

    @property
    def _deep(self) -> bool:
        return self._refs >= _RECURSION_DEPTH

    def _ref(self, ref: str, path: str, seed: int) -> Any:
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/") or name not in self._defs:
            raise self._fail(path, f"$ref {ref!r} points to no definition")
        if self._refs > 4 * _RECURSION_DEPTH:
            raise self._fail(path, f"{name} has no finite value (it always contains itself)")
        self._refs += 1
        try:
            return self.build(self._defs[name], path, seed)
        finally:
            self._refs -= 1

    def _union(self, options: list[Any], path: str, seed: int) -> Any:
        concrete = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if self._deep and len(concrete) < len(options):
            return None  # the way out of a recursive type
        if self._deep:
            flat = [o for o in concrete if not (isinstance(o, dict) and "$ref" in o)]
            concrete = flat or concrete
        return self.build(concrete[0], path, seed) if concrete else None

    def _string(self, schema: dict[str, Any], path: str, seed: int) -> str:
        low = int(schema.get("minLength") or 0)
        high = schema.get("maxLength")
        fmt = schema.get("format")
        pattern = schema.get("pattern")
        if fmt in _FORMATS and not pattern:
            return _FORMATS[str(fmt)]
        base = chr(ord("a") + seed % 26)
        text = base * max(low, 1)
        if high is not None and len(text) > int(high):
            text = text[: int(high)]
        if pattern is None:
            return text
        for candidate in (text, *_PATTERN_CANDIDATES):
            long_enough = len(candidate) >= low and (high is None or len(candidate) <= int(high))
            if long_enough and re.search(str(pattern), candidate):
                return candidate
        raise self._fail(path, f"no plain string matches the pattern {pattern!r}")

    def _number(self, schema: dict[str, Any], integer: bool, seed: int) -> int | float:
        step = 1 if integer else 0.5
        low = schema.get("minimum")
        high = schema.get("maximum")
        if schema.get("exclusiveMinimum") is not None:
            low = schema["exclusiveMinimum"] + step
        if schema.get("exclusiveMaximum") is not None:
            high = schema["exclusiveMaximum"] - step
        value: float = seed
        if low is not None:
            value = max(value, low)
        if high is not None:
            value = min(value, high)
        multiple = schema.get("multipleOf")
        if multiple:
            value = math.ceil(value / multiple) * multiple
        if integer:
            return math.ceil(value) if low is not None else math.floor(value)
        return float(value)

    def _array(self, schema: dict[str, Any], path: str, seed: int) -> list[Any]:
        low = int(schema.get("minItems") or 0)
        high = schema.get("maxItems")
        count = low if self._deep else max(low, 1)
        if high is not None:
            count = min(count, int(high))
        items = schema.get("items", {})
        return [self.build(items, f"{path}[{i}]", seed + i) for i in range(count)]

    def _object(self, schema: dict[str, Any], path: str, seed: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        keys = [k for k in properties if k in required or not self._deep]
        value = {k: self.build(properties[k], f"{path}.{k}" if path else k, seed) for k in keys}
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict) and extra:
            value["key"] = self.build(extra, f"{path}.key", seed)
        return value


def _kind(schema: dict[str, Any]) -> str | None:
    """The JSON type, lowercase (Gemini writes it in capitals); the first of a list."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        return "object" if "properties" in schema else None
    return str(kind).lower()


def value_for(schema: dict[str, Any], where: str) -> Any:
    """A value that fits ``schema``; ``where`` names it in errors ("tool 'x' arguments")."""
    return ValueBuilder(schema, where).build(schema)

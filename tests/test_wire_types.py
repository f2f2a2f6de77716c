"""One ``VariableMapping``: the wire (msgspec) and tool definitions (pydantic) share the type."""

from __future__ import annotations

import msgspec
import pydantic
import pytest

from chatflow.schemas import definition, wire


def test_definitions_and_the_wire_use_the_same_variable_mapping() -> None:
    assert definition.VariableMapping is wire.VariableMapping
    action = msgspec.convert({"id": "a", "toolId": "t", "publishedToolId": "pt",
                              "inputVariables": [{"name": "x", "value": "{{y}}"}]},
                             wire.ExecuteToolAction)
    assert action.inputVariables == [wire.VariableMapping("x", "{{y}}")]


def test_a_mapping_with_a_value_that_is_not_text_is_refused_on_both_sides() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"inputVariables\[0\].value"):
        msgspec.convert({"id": "a", "toolId": "t", "publishedToolId": "pt",
                         "inputVariables": [{"name": "x", "value": 3}]}, wire.ExecuteToolAction)
    with pytest.raises(pydantic.ValidationError, match="value"):
        pydantic.TypeAdapter(list[definition.VariableMapping]).validate_python([{"name": "x", "value": 3}])

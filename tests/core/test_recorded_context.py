"""The command context as the event log records it (runtime/events.py recordable_context):
secret-looking keys masked at any depth, the rest as it came, the given context unchanged."""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from chatflow.runtime.events import recordable_command_context, recordable_context


def test_a_secret_looking_key_is_masked_at_any_depth_and_the_given_context_stays_as_it_was() -> None:
    context = {"router": {"id": "r1", "accessToken": "tok-1"}, "flow": {"id": "f"},
               "contact": {"id": "c", "profile": {"api_key": "k", "name": "Ana"}}}
    before = copy.deepcopy(context)
    recorded = recordable_context(context)
    assert recorded == {"router": {"id": "r1", "accessToken": "***"}, "flow": {"id": "f"},
                        "contact": {"id": "c", "profile": {"api_key": "***", "name": "Ana"}}}
    assert list(recorded["contact"]) == ["id", "profile"]  # the keys keep their order
    assert context == before


def test_a_context_with_nothing_to_mask_is_recorded_as_it_is() -> None:
    context = {"router": {}, "flow": {"id": "f"}, "contact": {"id": "c", "tags": ["a"]}}
    assert recordable_context(context) == context


def test_a_mapping_that_is_not_a_dict_is_recorded_as_a_dict() -> None:
    recorded = recordable_context(MappingProxyType({"contact": MappingProxyType({"id": "c"})}))
    assert recorded == {"contact": {"id": "c"}}
    assert type(recorded) is dict and type(recorded["contact"]) is dict


_KEYS = st.sampled_from(["id", "name", "token", "apiKey", "password", "x", "profile", "Cookie"])
_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                       lambda inner: st.lists(inner, max_size=2)
                       | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(router=st.dictionaries(_KEYS, _VALUES, max_size=3),
       flow=st.dictionaries(_KEYS, _VALUES, max_size=3),
       contact=st.dictionaries(_KEYS, _VALUES, max_size=3))
def test_the_start_context_shortcut_records_what_the_general_one_does(
        router: dict[str, Any], flow: dict[str, Any], contact: dict[str, Any]) -> None:
    # Machine.start records its context with recordable_command_context: the same JSON, byte
    # for byte, as recordable_context's.
    context = {"router": router, "flow": flow, "contact": {"id": "c", **contact}}
    before = copy.deepcopy(context)
    encode = msgspec.json.encode
    assert encode(recordable_command_context(context)) == encode(recordable_context(context))
    assert context == before

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatflow.runtime.blocks.common import value_of
from chatflow.runtime.interpolation import _TOKEN, RenderTooLarge, lookup, render, to_text
from chatflow.runtime.state import ExecState, RootInfo
from chatflow.schemas.wire import ExecuteToolAction

VARS = {"name": "Ana", "resp": {"items": [{"id": 7}, {"id": 8}]}, "n": 3.0, "flag": True,
        "nothing": None, "raw": '{"a": {"b": 1}}', "tpl": "{{name}}"}
CTX = {"router": {"id": "r-1"}, "flow": {"id": "f-1"}, "contact": {"id": "551199"}}
_STATE = ExecState("e", "e", 0, 0, "t", "pt", "", "b", {}, {},
                   RootInfo("c", ExecuteToolAction("a", "t", "pt"), None, {}, "", {}, {}, 0), 0, 1)


@pytest.mark.parametrize(("template", "expected"), [
    ("Olá {{name}}", "Olá Ana"),
    ("{{ name }}", "Ana"),
    ("{{resp.items.0.id}}", "7"),
    ("{{resp.items.-1.id}}", "8"),
    ("{{resp.items}}", '[{"id":7},{"id":8}]'),
    ("{{missing}}|{{resp.nope.deeper}}", "|"),
    ("{{n}} {{flag}} [{{nothing}}]", "3 true []"),
    ("{{router.id}}/{{flow.id}}/{{contact.id}}", "r-1/f-1/551199"),
    ("{{raw.a.b}}", "1"),
    ("no tokens", "no tokens"),
])
def test_render_follows_spec(template: str, expected: str) -> None:
    assert render(template, VARS, CTX) == expected


def test_a_value_holding_a_template_is_not_rendered_again() -> None:
    assert render("{{tpl}}", VARS, CTX) == "{{name}}"


def test_render_refuses_to_grow_past_the_cap() -> None:
    big = {"x": "y" * 1000}
    with pytest.raises(RenderTooLarge):
        render("{{x}}" * 20, big, {}, max_chars=10_000)


def _regex_render(template: str, variables: dict[str, Any], context: dict[str, Any],
                  max_chars: int) -> str:
    """The one-pass regex render of before templates were parsed once: the oracle."""
    out: list[str] = []
    size = pos = 0
    for match in _TOKEN.finditer(template):
        piece = template[pos:match.start()] + to_text(lookup(match.group(1), variables, context))
        size += len(piece)
        if size > max_chars:
            raise RenderTooLarge(f"rendered text exceeds {max_chars} characters")
        out.append(piece)
        pos = match.end()
    out.append(template[pos:])
    return "".join(out)


_PIECES = st.sampled_from(["{{", "}}", "{", "}", " ", ".", "name", "resp", "items", "0", "-1",
                           "id", "contact", "raw", "a", "b", "tpl", "x" * 600, "Olá "])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join), st.integers(0, 2_000))
def test_a_template_parsed_once_renders_as_the_one_pass_regex_render(template: str,
                                                                      cap: int) -> None:
    def outcome(fn: Any, cap: int) -> str:
        try:
            return str(fn(template, VARS, CTX, max_chars=cap))
        except RenderTooLarge as exc:
            return f"refused: {exc}"

    full = len(_regex_render(template, VARS, CTX, 10**9))
    for at in [cap, *range(max(0, full - 40), full + 2)]:  # the cap's edge included
        expected = outcome(_regex_render, at) if "{{" in template else template
        assert outcome(render, at) == expected
        assert outcome(render, at) == expected  # and again, from the parsed template's cache


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join), st.sampled_from(["", "\n", " "]))
def test_a_mapping_value_is_the_raw_variable_for_one_token_as_before_paths_were_kept(
        template: str, end: str) -> None:
    # value_of keeps each template's one-token path once parsed: the oracle is the regex match
    # and lookup of before, for every template (a trailing newline still counts as one token).
    template += end
    state = msgspec.structs.replace(_STATE, variables=VARS, context=CTX)
    match = re.match(r"^\{\{\s*([^{}]+?)\s*\}\}$", template)
    expected = (lookup(match.group(1), VARS, CTX) if match
                else render(template, VARS, CTX, max_chars=10**6))
    for _ in range(2):  # and again, from the kept path
        assert value_of(template, state, 10**6) == expected

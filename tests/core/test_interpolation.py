from __future__ import annotations

import pytest

from chatflow.runtime.interpolation import RenderTooLarge, render

VARS = {"name": "Ana", "resp": {"items": [{"id": 7}, {"id": 8}]}, "n": 3.0, "flag": True,
        "nothing": None, "raw": '{"a": {"b": 1}}', "tpl": "{{name}}"}
CTX = {"router": {"id": "r-1"}, "flow": {"id": "f-1"}, "contact": {"id": "551199"}}


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

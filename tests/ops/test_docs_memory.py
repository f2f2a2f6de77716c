"""The memory figures per execution come from one measurement, written in one place
(docs/scale.md, "Memory per execution"); the other pages link to it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURE = re.compile(r"(\d+(?:\.\d+)?) KB")


def test_only_docs_scale_states_the_memory_figures_and_the_others_link_to_it() -> None:
    for name in ("docs/operations.md", "docs/guarantees.md", "README.md"):
        assert not FIGURE.findall((ROOT / name).read_text()), f"{name} repeats a KB figure"
    for name in ("docs/operations.md", "docs/guarantees.md"):
        assert "scale.md#memory-per-execution" in (ROOT / name).read_text(), name
    assert "### Memory per execution" in (ROOT / "docs" / "scale.md").read_text().splitlines()


def test_docs_scale_uses_the_same_figures_wherever_it_uses_them() -> None:
    text = (ROOT / "docs" / "scale.md").read_text()
    (in_flight,) = re.findall(r"\*\*(\S+) KB per in-flight execution\*\*", text)
    (answered,) = re.findall(r"\*\*(\S+) KB per finished execution\*\*", text)
    model = text[text.index("**Memory.**"):]
    # 0.3 KB: a command's guard and done key alone, for the dedup TTL
    assert set(FIGURE.findall(model)) - {"0.3"} == {in_flight, answered}

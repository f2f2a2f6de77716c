"""The README is a short front door: what it is, the two commands, a try-it, the promises in
brief and links. What it links to exists, the rest lives in docs/ (built by `make docs`), and
the test-timing statements agree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
RUN = "pip install . && chatflow up"
TEST = 'pip install -e ".[test]" && python -m pytest'


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 150


def test_the_readme_gives_the_two_commands_verbatim_and_ci_runs_the_test_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert [RUN] in [b.splitlines() for b in blocks]
    assert [TEST] in [b.splitlines() for b in blocks]
    ci = (ROOT / ".ci" / "run").read_text()
    install = ci.index('\npip install -e ".[test]" || exit 1\n')
    assert install < ci.index('\nstep "default tier" python -m pytest\n')


def test_what_the_readme_links_to_exists() -> None:
    links = re.findall(r"\]\(((?!https?:|#)[^)#]+)(?:#[^)]*)?\)", README)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def test_every_docs_page_is_in_the_site() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert {page for page in pages if f" {page}" not in nav} == set()


def minutes(text: str) -> set[str]:
    return set(re.findall(r"about (\d+) minutes", text))


def test_the_test_timing_is_stated_once_and_the_readme_agrees() -> None:
    testing = (ROOT / "docs" / "testing.md").read_text()
    stated = minutes(testing)
    assert len(stated) == 1
    assert minutes(README) == stated
    pyproject = (ROOT / "pyproject.toml").read_text()
    comment = pyproject[pyproject.index("[tool.pytest.ini_options]"):pyproject.index("addopts")]
    assert "docs/testing.md" in comment and not re.search(r"\d+ min", comment)

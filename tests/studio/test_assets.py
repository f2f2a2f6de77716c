"""Everything the Studio serves ships in the wheel: each static file matches package-data."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A script, style, import, fetch or stylesheet URL on another origin.
OUTSIDE = re.compile(r"""(src|href)=["']?(https?:)?//|from\s+["'](https?:)?//|"""
                     r"""import\(["'](https?:)?//|fetch\(["'](https?:)?//|url\(["']?(https?:)?//""")


def test_every_studio_file_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["chatflow.handlers.studio"]
    static = ROOT / "handlers" / "studio"
    files = [p.relative_to(static).as_posix() for p in (static / "static").rglob("*") if p.is_file()]
    assert len(files) > 10
    missing = [f for f in files if not any(fnmatch(f, pat) and f.count("/") == pat.count("/")
                                           for pat in patterns)]
    assert missing == []


def test_no_studio_file_loads_anything_from_another_origin_or_parses_html() -> None:
    static = ROOT / "handlers" / "studio" / "static"
    for path in static.rglob("*"):
        if path.suffix not in (".js", ".html", ".css"):
            continue
        text = path.read_text()
        assert not OUTSIDE.search(text), (path, OUTSIDE.search(text))
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in text, (path, sink)

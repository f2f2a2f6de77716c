"""Everything the Studio serves ships in the wheel: each static file matches package-data; our
files never parse HTML; the vendored libraries are the pinned files VENDOR.md names."""

from __future__ import annotations

import hashlib
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


STATIC = ROOT / "handlers" / "studio" / "static"
# The vendored files as VENDOR.md names them; a change must be a deliberate update.
VENDORED = {
    "vendor/dagre/dagre.esm.js": "cf85ac740ad206f01209bf030b903df8bebac87b965042de02b54d7e6a1e4055",
    "vendor/drawflow/drawflow.min.js": "caf8c4f15b75e27169632ed2122715e52aeb5930b9adca6f519bd82a485a31e2",
    "vendor/drawflow/drawflow.min.css": "57e5b37f72d95f97597263f17ef0ae9f0a0cd7b966e039b9f43508040d5dedf2",
}


def test_no_studio_file_loads_anything_from_another_origin_or_parses_html() -> None:
    for path in STATIC.rglob("*"):
        if path.suffix not in (".js", ".html", ".css"):
            continue
        text = path.read_text()
        assert not OUTSIDE.search(text), (path, OUTSIDE.search(text))
        # Drawflow uses innerHTML for node HTML; the canvas passes it "" and builds nodes itself.
        sinks = ("eval(", "new Function") if "vendor" in path.parts else (
            "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(")
        for sink in sinks:
            assert sink not in text, (path, sink)


def test_the_vendored_libraries_are_the_pinned_files_with_their_licences() -> None:
    vendor = STATIC / "vendor"
    shipped = {p.relative_to(STATIC).as_posix() for p in vendor.rglob("*")
               if p.suffix in (".js", ".css")}
    assert shipped == set(VENDORED)
    for name, digest in VENDORED.items():
        assert hashlib.sha256((STATIC / name).read_bytes()).hexdigest() == digest, name
        assert (STATIC / name).parent.joinpath("LICENSE.txt").read_text().startswith(
            ("MIT", "Copyright", "The MIT")), name
    notes = (vendor / "VENDOR.md").read_text()
    assert "drawflow@0.0.60" in notes and "@dagrejs/dagre@3.1.3" in notes

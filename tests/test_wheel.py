"""The built wheel installs exactly two top-level packages: chatflow and chatflow_agent."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a wheel is built from; copied so the build leaves nothing in the work tree.
SOURCES = ["pyproject.toml", "README.md", "runtime", "handlers", "schemas", "examples", "chatflow_agent"]


def build_wheel(into: Path) -> Path:
    src = into / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    # No build isolation: the test extra installs setuptools and wheel, so no index is needed.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(into / "dist"), str(src)], check=True, timeout=240)
    (wheel,) = (into / "dist").glob("*.whl")
    return wheel


def test_the_wheel_has_exactly_chatflow_and_chatflow_agent_at_the_top(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == {"chatflow", "chatflow_agent"}
    assert "chatflow/__init__.py" not in names  # a namespace package: the SDK's users may extend it
    for needed in ("chatflow/handlers/dataplane/lua/commit.lua", "chatflow/runtime/__init__.py",
                   "chatflow/schemas/__init__.py", "chatflow/examples/__init__.py",
                   "chatflow_agent/__init__.py"):
        assert needed in names

"""Configuration lives in Settings: one module per side of the distribution reads the
environment (``handlers/settings.py`` for the service, ``chatflow_agent/settings.py`` for the
SDK), and no module writes it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("runtime", "handlers", "schemas", "examples", "chatflow_agent")
READERS = {Path("handlers/settings.py"), Path("chatflow_agent/settings.py")}
# Everything of ``os`` that reads or changes the process environment.
ENVIRONMENT = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def touches(source: str) -> list[str]:
    """Where ``source`` reaches the environment: ``os.environ``, ``os.getenv(...)``,
    ``from os import environ``, ``import os as x; x.putenv``, each as ``line: what``."""
    tree = ast.parse(source)
    os_names = {"os"}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname for a in node.names if a.name == "os" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"{node.lineno}: from os import {a.name}" for a in node.names
                      if a.name in ENVIRONMENT]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT
                and isinstance(node.value, ast.Name) and node.value.id in os_names):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def modules() -> Iterator[Path]:
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_module_but_the_two_settings_readers_touches_the_environment() -> None:
    offenders = {str(path.relative_to(ROOT)): hits for path in modules()
                 if path.relative_to(ROOT) not in READERS
                 and (hits := touches(path.read_text(encoding="utf-8")))}
    assert offenders == {}


def test_pydantic_settings_reads_the_environment_only_in_the_services_settings() -> None:
    """BaseSettings is the other way to read the environment: one module uses it."""
    users = {str(path.relative_to(ROOT)) for path in modules()
             if any(isinstance(node, ast.ImportFrom | ast.Import)
                    and "pydantic_settings" in {getattr(node, "module", None),
                                                *(a.name for a in node.names)}
                    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert users == {"handlers/settings.py"}


@pytest.mark.parametrize("source", [
    "import os\nos.environ['REDIS_URL'] = 'redis://x'",
    "import os\nurl = os.getenv('REDIS_URL')",
    "import os as system\nsystem.putenv('A', 'b')",
    "from os import environ\nenviron.get('A')",
    "from os import getenv as read\nread('A')",
    "import os\ndef f():\n    return os.environ.copy()",
])
def test_the_check_sees_every_way_of_touching_the_environment(source: str) -> None:
    assert touches(source)


def test_the_check_leaves_other_uses_of_os_alone() -> None:
    assert touches("import os\nos.cpu_count()\nos.getpid()\nenviron = {}\nenviron.get('x')") == []

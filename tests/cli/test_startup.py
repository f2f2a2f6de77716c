"""``chatflow --help`` and ``chatflow exec`` start without importing the heavy parts, and the
command table in cli/main.py lists exactly what the command modules register."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from chatflow.handlers.cli.main import COMMANDS, build_parser

# What only a command's own work needs: the API framework, the worker, settings, Redis.
HEAVY = {"fastapi", "uvicorn", "redis", "pydantic_settings", "faststream", "py_mini_racer",
         "chatflow.handlers.dataplane.worker", "chatflow.handlers.api", "chatflow.handlers.settings"}


def imported_modules(*argv: str) -> set[str]:
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "chatflow.handlers.cli", *argv],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[1].strip() for line in lines}


@pytest.mark.parametrize("argv", [["--help"], ["exec", "--help"], ["tail", "--help"]],
                         ids=" ".join)
def test_the_command_line_starts_without_the_heavy_imports(argv: list[str]) -> None:
    modules = imported_modules(*argv)
    assert "chatflow.handlers.cli.main" in modules
    assert not {m.split(".")[0] for m in modules} & HEAVY
    assert not modules & HEAVY


def test_help_lists_every_command_without_importing_its_module() -> None:
    modules = imported_modules("--help")
    assert not {m for m in modules if m.endswith("_cmd")}
    run = subprocess.run([sys.executable, "-m", "chatflow.handlers.cli", "--help"],
                         capture_output=True, text=True, timeout=60)
    for name in COMMANDS:
        assert name in run.stdout


def test_the_command_table_matches_what_each_module_registers() -> None:
    for module in {m for m, _ in COMMANDS.values()}:
        parser = argparse.ArgumentParser(prog="chatflow")
        sub = parser.add_subparsers()
        importlib.import_module(f"chatflow.handlers.cli.{module}").register(sub)
        listed = {name: help_ for name, (m, help_) in COMMANDS.items() if m == module}
        assert set(sub.choices) == set(listed), module
        shown = " ".join(parser.format_help().split())
        for help_ in listed.values():
            assert " ".join(help_.split()) in shown, (module, help_)
    assert set(build_parser().parse_args(["exec", "--tool", "pt"]).__dict__) >= {"tool", "handler"}

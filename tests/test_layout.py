"""handlers/ is grouped by job (docs/architecture.md): a new module goes into its group's
package, and the root keeps only what every group shares."""

from __future__ import annotations

from pathlib import Path

HANDLERS = Path(__file__).resolve().parent.parent / "handlers"
SHARED = {"__init__.py", "keys.py", "redis_client.py", "settings.py", "redaction.py"}
GROUPS = {"dataplane", "controlplane", "interfaces", "operations", "api", "cli", "studio",
          "history", "projections", "registry"}


def test_the_handlers_root_holds_only_the_modules_every_group_shares() -> None:
    assert {p.name for p in HANDLERS.glob("*.py")} == SHARED


def test_every_package_under_handlers_is_a_named_group() -> None:
    packages = {p.parent.name for p in HANDLERS.glob("*/__init__.py")}
    assert packages == GROUPS

"""``chatflow history upgrade|status`` in a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def chatflow(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CHATFLOW_HISTORY")}
    return subprocess.run([sys.executable, "-m", "chatflow.handlers.cli", *args],
                          capture_output=True, text=True, timeout=120, env={**full, **(env or {})})


def test_history_upgrade_migrates_once_and_status_says_where_the_database_is(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    before = chatflow("history", "status", "--url", url)
    assert before.returncode == 1 and "at none" in before.stdout
    first = chatflow("history", "upgrade", env={"CHATFLOW_HISTORY_URL": url})
    assert first.returncode == 0, first.stderr
    assert "empty -> r0001" in first.stdout
    again = chatflow("history", "upgrade", "--url", url)
    assert again.returncode == 0 and "already at r0001" in again.stdout
    assert chatflow("history", "status", "--url", url).returncode == 0


def test_history_upgrade_without_a_database_says_what_to_set() -> None:
    done = chatflow("history", "upgrade")
    assert done.returncode == 2 and "CHATFLOW_HISTORY_URL" in done.stderr


def test_a_postgres_password_is_never_printed() -> None:
    done = chatflow("history", "status", "--url", "postgresql://u:hunter2@127.0.0.1:1/db")
    assert done.returncode == 2 and "hunter2" not in done.stderr + done.stdout
    assert "CHATFLOW_HISTORY_URL" in done.stderr

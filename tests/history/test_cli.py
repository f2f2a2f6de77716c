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
    assert "empty -> r0002" in first.stdout
    again = chatflow("history", "upgrade", "--url", url)
    assert again.returncode == 0 and "already at r0002" in again.stdout
    assert chatflow("history", "status", "--url", url).returncode == 0


def test_history_upgrade_without_a_database_says_what_to_set() -> None:
    done = chatflow("history", "upgrade")
    assert done.returncode == 2 and "CHATFLOW_HISTORY_URL" in done.stderr


def test_a_postgres_password_is_never_printed() -> None:
    done = chatflow("history", "status", "--url", "postgresql://u:hunter2@127.0.0.1:1/db")
    assert done.returncode == 2 and "hunter2" not in done.stderr + done.stdout
    assert "CHATFLOW_HISTORY_URL" in done.stderr


def test_chatflow_executions_finds_finished_runs_with_the_apis_filters(tmp_path: Path) -> None:
    import asyncio
    import json

    from chatflow.handlers.history.db import engine_for, upgrade
    from chatflow.handlers.history.writer import HistoryWriter
    from tests.history.test_retention import run_at

    url = f"sqlite:///{tmp_path / 'h.db'}"

    async def seed() -> None:
        engine = engine_for(url)
        await upgrade(engine)
        made = [run_at(i, 1_800_000_000_000 + i) for i in range(4)]
        made[2].run.update(status="error", error_code="http_status", contact_id="c-9")
        await HistoryWriter(engine).write(made)
        await engine.dispose()

    asyncio.run(seed())
    found = chatflow("executions", "--state", "finished", "--contact", "c-9", "--status",
                     "error", "--json", "--history-url", url)
    assert found.returncode == 0, found.stderr
    (row,) = [json.loads(line) for line in found.stdout.splitlines()]
    assert (row["executionId"], row["errorCode"]) == ("0-run2", "http_status")
    first = chatflow("executions", "--state", "finished", "--limit", "3",
                     "--history-url", url)
    assert first.returncode == 0 and "0-run3" in first.stdout and "0-run0" not in first.stdout
    cursor = first.stderr.strip().rsplit(" ", 1)[1]
    rest = chatflow("executions", "--state", "finished", "--limit", "3", "--cursor", cursor,
                    "--json", "--history-url", url)
    assert [json.loads(x)["executionId"] for x in rest.stdout.splitlines()] == ["0-run0"]
    bad = chatflow("executions", "--state", "finished", "--since", "soon", "--history-url", url)
    assert bad.returncode == 2 and "--since" in bad.stderr

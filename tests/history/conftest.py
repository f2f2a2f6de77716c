"""The history tests run on SQLite and on a real PostgreSQL (tests/support/postgres.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatflow.handlers.history.db import engine_for, upgrade
from tests.support.postgres import postgres_server, postgres_url  # noqa: F401  (fixtures)


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty history database, not migrated yet."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
async def migrated_url(history_url: str) -> str:
    engine = engine_for(history_url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()
    return history_url

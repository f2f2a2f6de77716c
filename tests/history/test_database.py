"""The history database: its URL, its migrations, the worker's check at start."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from chatflow.handlers.dataplane.worker import Worker
from chatflow.handlers.history.db import HistoryError, async_url, current, engine_for, head, upgrade
from chatflow.handlers.history.schema import metadata
from chatflow.handlers.settings import Settings


def test_an_operator_url_gets_its_async_driver() -> None:
    assert async_url("sqlite:///x/history.db") == "sqlite+aiosqlite:///x/history.db"
    assert async_url("postgresql://u:p@h/db") == "postgresql+asyncpg://u:p@h/db"
    assert async_url("postgres://u@h/db") == "postgresql+asyncpg://u@h/db"


def test_a_url_of_another_database_is_refused_naming_what_works() -> None:
    with pytest.raises(HistoryError, match=r"SQLite .* or PostgreSQL"):
        async_url("mysql://u:p@h/db")
    with pytest.raises(HistoryError, match="not a database URL"):
        async_url("no url at all")


async def test_upgrade_creates_every_table_of_the_schema_and_is_idempotent(
        history_url: str) -> None:
    engine = engine_for(history_url)
    try:
        assert await current(engine) is None
        before, after = await upgrade(engine)
        assert (before, after) == (None, head())
        assert await upgrade(engine) == (head(), head())
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
            columns = await conn.run_sync(lambda c: {
                t: {col["name"] for col in sa.inspect(c).get_columns(t)}
                for t in metadata.tables})
        assert set(metadata.tables) <= names
        for name, table in metadata.tables.items():
            assert columns[name] == {c.name for c in table.columns}, name
    finally:
        await engine.dispose()


async def test_a_worker_refuses_a_database_behind_its_migrations(
        history_url: str, redis_url: str, prefix: str) -> None:
    worker = Worker(Settings(redis_url=redis_url, prefix=prefix, history_url=history_url),
                    redis_url)
    with pytest.raises(HistoryError, match="chatflow history upgrade"):
        await worker.start()


async def test_an_unreachable_database_is_reported_with_the_setting_to_check(
        redis_url: str) -> None:
    from chatflow.handlers.operations.embedded import free_port

    engine = engine_for(f"postgresql://nobody:hunter2@127.0.0.1:{free_port()}/none")
    try:
        with pytest.raises(HistoryError, match="CHATFLOW_HISTORY_URL") as caught:
            await current(engine)
        assert "hunter2" not in str(caught.value)
    finally:
        await engine.dispose()

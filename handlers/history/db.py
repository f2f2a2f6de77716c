"""The history database: its engine, its migrations (Alembic), and the check a worker makes
before it writes.

``sqlite:///path`` and ``postgresql://...`` are what an operator writes; the async drivers
(aiosqlite, asyncpg) are chosen here. The URL may carry a password: it is only ever shown
through :func:`shown`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chatflow.runtime.errors import ChatflowError

VERSION_TABLE = "chatflow_history_version"  # apart from any Alembic table of the host database
_MIGRATIONS = Path(__file__).parent / "migrations"
_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg",
            "postgres": "postgresql+asyncpg"}


class HistoryError(ChatflowError):
    """Raised when the history database cannot be used (bad URL, unreachable, not migrated)."""


def async_url(url: str) -> str:
    """``url`` with its async driver: ``sqlite:///x.db`` -> ``sqlite+aiosqlite:///x.db``."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise HistoryError(f"CHATFLOW_HISTORY_URL is not a database URL ({exc}); write "
                           "sqlite:///path/history.db or postgresql://user:pass@host/db") from exc
    backend = parsed.drivername.split("+", 1)[0]
    if backend not in _DRIVERS:
        raise HistoryError(f"CHATFLOW_HISTORY_URL names {parsed.drivername!r}: the history runs "
                           "on SQLite (sqlite:///path) or PostgreSQL (postgresql://...)")
    if "+" not in parsed.drivername or backend == "postgres":
        parsed = parsed.set(drivername=_DRIVERS[backend])
    return parsed.render_as_string(hide_password=False)


def shown(url: str) -> str:
    """The URL as it may appear in a message: the password masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def engine_for(url: str, **kwargs: Any) -> AsyncEngine:
    full = async_url(url)
    if full.startswith("sqlite"):
        path = make_url(full).database
        if path and path != ":memory:":
            private_file(Path(path))
        # Several worker processes write one file: WAL lets readers go on while one writes,
        # and a writer waits for the lock instead of failing at once.
        engine = create_async_engine(full, connect_args={"timeout": 30}, **kwargs)

        @sa.event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        return engine
    return create_async_engine(full, pool_pre_ping=True, **kwargs)


def private_file(path: Path) -> None:
    """Create the SQLite file 0600 before SQLite does (it would follow the umask), and make an
    existing one and its WAL and SHM 0600: the history holds every workspace's runs. SQLite
    gives the WAL and SHM it creates the database file's own mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        if name.exists():
            os.chmod(name, 0o600)


def _config(connection: Connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    revision = ScriptDirectory.from_config(_config(None)).get_current_head()  # type: ignore[arg-type]
    assert revision is not None
    return revision


def _current(connection: Connection) -> str | None:
    ctx = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return ctx.get_current_revision()


async def current(engine: AsyncEngine) -> str | None:
    """The revision the database is at (None: never migrated)."""
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_current)
    except (SQLAlchemyError, OSError) as exc:
        raise HistoryError(f"cannot reach the history database {shown(str(engine.url))}: "
                           f"{exc.__class__.__name__}: {exc}; check CHATFLOW_HISTORY_URL and "
                           "that the server runs") from exc


async def upgrade(engine: AsyncEngine) -> tuple[str | None, str]:
    """Migrate to the newest revision; returns (before, after)."""
    before = await current(engine)

    def run(connection: Connection) -> None:
        command.upgrade(_config(connection), "head")

    async with engine.begin() as conn:
        await conn.run_sync(run)
    return before, head()


async def check(engine: AsyncEngine) -> None:
    """Refuse to write into a database that is not at the newest revision (worker start)."""
    at, want = await current(engine), head()
    if at != want:
        raise HistoryError(
            f"the history database {shown(str(engine.url))} is at revision {at or 'none'}, this "
            f"version needs {want}: run `chatflow history upgrade` (with the same "
            "CHATFLOW_HISTORY_URL), then start the worker again")

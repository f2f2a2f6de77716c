"""``chatflow history upgrade|status``: the run history database's migrations (Alembic).

Workers refuse to write into a database behind this version's migrations; this is the
command that brings it forward (``chatflow up`` does it on its own for its SQLite file).
"""

from __future__ import annotations

import argparse
import asyncio

from chatflow.runtime.errors import ConfigurationError

from .common import settings_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("history", help="the run history database: migrations")
    ps = p.add_subparsers(dest="action", required=True)
    for name, help_, handler in (
            ("upgrade", "apply the history database's migrations (idempotent)", cmd_upgrade),
            ("status", "the database's revision and the one this version needs", cmd_status),
            ("verify", "check that every event of stream:tool-executions has its run row",
             cmd_verify)):
        c = ps.add_parser(name, help=help_)
        c.add_argument("--url", help="the database (overrides CHATFLOW_HISTORY_URL)")
        c.set_defaults(handler=handler)
        if name == "verify":
            c.add_argument("--redis-url", help="overrides REDIS_URL")


def _url(args: argparse.Namespace) -> str:
    from .local_up import missing

    settings = settings_from(args)
    url: str = args.url or settings.history_url
    if not url:
        raise ConfigurationError("no history database: set CHATFLOW_HISTORY_URL "
                                 "(sqlite:///path/history.db or postgresql://...), pass --url, "
                                 "or run this in the folder of a `chatflow up` or below it ("
                                 + missing(settings, "history URL", "historyUrl") + ")")
    return url


def cmd_upgrade(args: argparse.Namespace) -> int:
    from ..history.db import engine_for, shown, upgrade

    url = _url(args)

    async def run() -> tuple[str | None, str]:
        engine = engine_for(url)
        try:
            return await upgrade(engine)
        finally:
            await engine.dispose()

    before, after = asyncio.run(run())
    print(f"history database {shown(url)}: "
          + (f"already at {after}" if before == after else f"{before or 'empty'} -> {after}"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..history.db import current, engine_for, head, shown

    url = _url(args)

    async def run() -> str | None:
        engine = engine_for(url)
        try:
            return await current(engine)
        finally:
            await engine.dispose()

    at, want = asyncio.run(run()), head()
    print(f"history database {shown(url)}: at {at or 'none'}, this version needs {want}")
    return 0 if at == want else 1


def cmd_verify(args: argparse.Namespace) -> int:
    from ..history.db import engine_for
    from ..history.verify import Verified, verify
    from .common import client_for

    url = _url(args)
    client, keys = client_for(settings_from(args))

    async def run() -> Verified:
        engine = engine_for(url)
        try:
            return await verify(client, keys, engine)
        finally:
            await engine.dispose()
            await client.aclose()

    found = asyncio.run(run())
    print(f"{found.events} execution events in the stream, {found.stored} in the history, "
          f"{len(found.missing)} missing" + (f": {', '.join(found.missing[:10])}"
                                             if found.missing else ""))
    return 0 if found.ok else 1

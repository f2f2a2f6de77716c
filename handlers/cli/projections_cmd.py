"""``chatflow projections run|rebuild|trim``: the execution log projection by hand."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time

from ..dataplane.worker import consumer_name
from ..keys import Keys
from ..operations.logging import configure_logging
from ..operations.loop import run_service
from ..projections.execlog import drop, rebuild, snapshot, trim_source
from ..projections.runner import ProjectionRunner
from ..redis_client import Client
from .common import add_redis_flag, client_for, require_url, settings_from

SCRATCH = "projrb"
MAX_PRINTED = 100  # differences printed one a line; the summary counts them all


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("projections", help="the execution log projection (7-day tool metrics)")
    ps = p.add_subparsers(dest="action", required=True)
    run = ps.add_parser("run", help="consume stream:tool-executions (group core-tool-executions)")
    add_redis_flag(run)
    run.set_defaults(handler=cmd_run)
    rb = ps.add_parser("rebuild", help="replay the run history (when configured) and "
                       "stream:tool-executions into fresh projections")
    add_redis_flag(rb)
    rb.add_argument("--verify", action="store_true",
                    help="rebuild into a scratch namespace and compare it with the live one "
                         "(the live projection is left alone); with a run history "
                         "(CHATFLOW_HISTORY_URL), also check that every execution in the "
                         "stream is in it once, with the same tool, status, duration and end")
    rb.add_argument("--history-url", help="overrides CHATFLOW_HISTORY_URL: the runs the stream no "
                    "longer holds are rebuilt from it")
    rb.set_defaults(handler=cmd_rebuild)
    tr = ps.add_parser("trim", help="MINID-trim stream:tool-executions to its retention now")
    add_redis_flag(tr)
    tr.set_defaults(handler=cmd_trim)


def cmd_run(args: argparse.Namespace) -> int:
    configure_logging()
    settings = settings_from(args)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        runner = ProjectionRunner(settings, require_url(settings), consumer_name())
        await runner.start()
        try:
            await stop.wait()
        finally:
            await runner.stop()

    run_service(main(), settings.event_loop)
    return 0


class ProgressLine:
    """``rebuild: 1500/4000 events (37%)`` on stderr, redrawn in place on a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < 0.2 and self.tty:
            return
        self._last = now
        pct = 100 * done // total if total else 100
        line = f"{self.label}: {done}/{total} events ({pct}%)"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


async def _rebuild(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    client, keys = client_for(settings)
    retention = settings.projection_log_retention_s * 1000
    progress = ProgressLine("rebuild")
    try:
        now = int(time.time() * 1000)
        ns = SCRATCH if args.verify else "proj"
        history_url = args.history_url or settings.history_url
        engine = None
        if history_url:  # the history holds what the stream's retention trimmed
            from ..history.db import engine_for
            from ..history.queries import metric_rows

            engine = engine_for(history_url)
        try:
            count = await rebuild(client, keys, ns=ns, log_retention_ms=retention,
                                  clock=lambda: now, progress=progress,
                                  history=metric_rows(engine, now - retention) if engine else None)
        finally:
            if engine is not None:
                await engine.dispose()
        progress.close()
        print(f"rebuilt {'scratch' if args.verify else 'live'} projection from {count} events"
              + (" and the run history" if engine is not None else ""))
        if not args.verify:
            return 0
        try:
            live = await snapshot(client, keys, ns="proj", now=now)
            fresh = await snapshot(client, keys, ns=SCRATCH, now=now)
        finally:
            await drop(client, keys, SCRATCH)  # the copy was only for comparing: none is kept
        differ = sorted(t for t in set(live) | set(fresh) if live.get(t) != fresh.get(t))
        for tool in differ:
            print(json.dumps({"tool": tool, "live": live.get(tool, {}).get("metrics"),
                              "rebuilt": fresh.get(tool, {}).get("metrics")}))
        print("projections equal" if not differ else f"{len(differ)} tool(s) differ "
              "(events trimmed from the stream can no longer be rebuilt; see docs/operations.md)")
        history_ok = await _verify_history(history_url, client, keys)
        return 0 if not differ and history_ok else 1
    finally:
        await client.aclose()


async def _verify_history(url: str, client: Client, keys: Keys) -> bool:
    """The run history against the stream (docs/history.md); True when there is none."""
    if not url:
        print("no run history configured (CHATFLOW_HISTORY_URL): the database was not checked")
        return True
    from ..history.db import engine_for, shown
    from ..history.verify import verify

    engine = engine_for(url)
    try:
        found = await verify(client, keys, engine)
    finally:
        await engine.dispose()
    for exec_id in found.missing[:MAX_PRINTED]:
        print(json.dumps({"execution": exec_id, "history": "missing"}))
    for exec_id, column, stream, stored in found.differ[:MAX_PRINTED]:
        print(json.dumps({"execution": exec_id, "column": column, "stream": stream,
                          "history": stored}))
    print(f"history {shown(url)}: {found.events} executions in the stream, {found.stored} "
          f"stored, {len(found.missing)} missing, {found.differing} differ"
          + ("" if found.ok else " (is the history projection caught up? a worker with "
             "CHATFLOW_HISTORY_URL feeds it; see docs/history.md)"))
    return found.ok


def cmd_rebuild(args: argparse.Namespace) -> int:
    return asyncio.run(_rebuild(args))


async def _trim(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    client, keys = client_for(settings)
    try:
        n = await trim_source(client, keys, retention_ms=settings.executions_retention_s * 1000,
                                 unread_max_ms=settings.executions_unread_max_s * 1000)
    finally:
        await client.aclose()
    print(f"trimmed {n} entries from {keys.executions}")
    return 0


def cmd_trim(args: argparse.Namespace) -> int:
    return asyncio.run(_trim(args))

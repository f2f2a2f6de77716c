"""``chatflow up`` and ``chatflow worker``: run the workers until a signal."""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chatflow.runtime.errors import ChatflowError

from ..operations.loop import run_service
from .common import (
    add_redis_flag,
    announce_egress,
    ensure_reachable,
    require_url,
    settings_from,
)

if TYPE_CHECKING:
    from ..operations.embedded import EmbeddedServer
    from ..settings import Settings


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="everything in one process (embedded Valkey without REDIS_URL)")
    add_redis_flag(up)
    up.add_argument("--data-dir", default=".chatflow/valkey",
                    help="where the embedded Valkey keeps its AOF (default .chatflow/valkey)")
    up.add_argument("--port", type=int, default=6379, help="embedded Valkey port (0: any free)")
    up.add_argument("--no-examples", action="store_true", help="do not publish examples/")
    up.add_argument("--api-port", type=int, default=None,
                    help="HTTP API port (default CHATFLOW_API_PORT, 8080)")
    up.add_argument("--no-api", action="store_true", help="do not serve the HTTP API")
    up.add_argument("--metrics-port", type=int, default=None,
                    help="serve /metrics and /health/* here (default CHATFLOW_METRICS_PORT; 0 off)")
    up.set_defaults(handler=cmd_up)

    worker = sub.add_parser("worker", help="the stream workers, against REDIS_URL")
    add_redis_flag(worker)
    worker.add_argument("--processes", type=int, default=1, help="worker processes to run")
    worker.add_argument("--concurrency", type=int, default=None,
                        help="in-flight batches per subscriber (default CHATFLOW_INFLIGHT_BATCHES)")
    worker.add_argument("--metrics-port", type=int, default=None,
                        help="serve /metrics and /health/* (process i of --processes uses port+i)")
    worker.add_argument("--tools", action="append", default=[], metavar="MODULE",
                        help="serve this module's @tool functions as native tools (repeatable)")
    worker.set_defaults(handler=cmd_worker)


def _worker_process(settings_json: str, url: str, index: int = 0,
                    tool_modules: Sequence[str] = ()) -> None:
    from ..operations.logging import configure_logging
    from ..operations.serving import serve_workers
    from ..settings import Settings

    configure_logging()
    settings = Settings.model_validate_json(settings_json)
    if settings.metrics_port:  # one exposition per process: see handlers/operations/metrics.py
        settings = settings.model_copy(update={"metrics_port": settings.metrics_port + index})
    try:
        run_service(serve_workers(settings, url, tool_modules=tool_modules), settings.event_loop)
    except ChatflowError as exc:  # the supervisor sees the exit code and stops the set
        print(f"chatflow worker process {index}: {exc}", file=sys.stderr)
        sys.exit(2)


def _with_metrics_port(settings: Settings, args: argparse.Namespace) -> Settings:
    if args.metrics_port is None:
        return settings
    return settings.model_copy(update={"metrics_port": args.metrics_port})


def cmd_worker(args: argparse.Namespace) -> int:
    from ..dataplane.native import load_native_tools
    from ..operations.logging import configure_logging
    from ..operations.serving import serve_workers
    from .common import warn_without_encryption_key
    from .supervise import supervise

    configure_logging()
    settings = settings_from(args)
    if args.concurrency:
        settings = settings.model_copy(update={"inflight_batches": args.concurrency})
    settings = _with_metrics_port(settings, args)
    url = require_url(settings)
    load_native_tools(args.tools)  # a bad module fails here, before any process starts
    # No Valkey: one line and exit 3 (not a wait with backoff), so a supervisor (systemd,
    # Kubernetes, compose) restarts the worker on its own schedule and the failure shows.
    ensure_reachable(settings)
    announce_egress(settings)
    warn_without_encryption_key(settings)  # once it can start: an unreachable Valkey says one line
    if args.processes <= 1:
        run_service(serve_workers(settings, url, tool_modules=args.tools), settings.event_loop)
        return 0
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_worker_process,
                         args=(settings.model_dump_json(), url, i, tuple(args.tools)))
             for i in range(args.processes)]
    return supervise(procs)


@dataclass(frozen=True, slots=True)
class AdminKey:
    token: str
    path: Path
    created: bool

    def text(self, root: str, base_path: str) -> str:
        """What ``up`` says of it once the API at ``root`` listens, with a curl line."""
        return (f"{'new' if self.created else 'existing'} admin API key of workspace default "
                f"(kept in {self.path}, mode 0600):\n{self.token}\n"
                f"try: curl -H \"Authorization: Bearer $(cat {self.path})\" "
                f"{root}{base_path.rstrip('/')}/tools")


def admin_key(settings: Settings, url: str, data_dir: Path) -> AdminKey | None:
    """On a loopback API: the admin key of ``default`` (made on first start); else None,
    having said how to make one."""
    from .admin_key import ensure_admin_key, is_loopback

    if not is_loopback(settings.api_host):
        print("API not on loopback: no key made; create one with "
              "`chatflow keys create --workspace default --role admin`", file=sys.stderr)
        return None
    return AdminKey(*asyncio.run(ensure_admin_key(settings, url, data_dir)))


def announce_admin_key(settings: Settings, url: str, data_dir: Path, port: int | None) -> None:
    """The admin key and its curl line, for an API on ``port`` (default: the settings')."""
    key = admin_key(settings, url, data_dir)
    if key is not None:
        root = f"http://{settings.api_host}:{settings.api_port if port is None else port}"
        print(key.text(root, settings.api_base_path), file=sys.stderr)


def shell_url(url: str, server: EmbeddedServer | None) -> str:
    """``url`` for a shell line, the embedded server's password read from its file, so the
    password itself is never printed."""
    from ..redis_client import redact

    if server is None or not server.password:
        return redact(url)
    return (f'"redis://default:$(cat {shlex.quote(str(server.password_file))})'
            f'@127.0.0.1:{server.port}/0"')


def cmd_up(args: argparse.Namespace) -> int:
    from ..controlplane.examples import publish_examples
    from ..operations.embedded import EmbeddedServer, private_dir
    from ..operations.logging import configure_logging
    from ..operations.serving import STOP_SIGNALS, api_root, serve_with_worker, serve_workers
    from ..redis_client import redact

    configure_logging()
    private_dir(Path(args.data_dir).resolve())  # 0700, its files 0600 (docs/security.md)
    # The environment alone: an up.json here is this command's own, from an earlier start.
    settings = _with_metrics_port(settings_from(args, discover=False), args)
    if not settings.history_url:  # the run history, embedded: a SQLite file, nothing to install
        history = Path(args.data_dir).resolve() / "history.db"
        settings = settings.model_copy(update={"history_url": f"sqlite:///{history}",
                                               "history_auto_migrate": True})
    server = None
    key_file = None
    url = settings.redis_url
    for sig in STOP_SIGNALS:  # until the workers' loop takes them over: unwind, stop the server
        signal.signal(sig, _exit_on_signal)
    if url:
        ensure_reachable(settings)
    else:
        server = EmbeddedServer(port=args.port, data_dir=str(Path(args.data_dir).resolve()),
                                appendonly=True, die_with_parent=True).start()
        url = server.url
        print(f"embedded Valkey on {redact(url)} (password in {server.password_file}, "
              f"AOF in {server.data_dir})", file=sys.stderr)
        # Passed on as settings, never through os.environ: whatever starts from here gets
        # the URL from the Settings object it is handed.
        settings = settings.model_copy(update={"redis_url": url})
    announce_egress(settings)
    settings, key_file = up_encryption_key(settings, Path(args.data_dir).resolve())
    try:
        if not args.no_examples:
            names = asyncio.run(publish_examples(settings, url))
            print(f"published examples: {', '.join(names)}", file=sys.stderr)
        key = None if args.no_api else admin_key(settings, url, Path(args.data_dir).resolve())
        here = Ready(settings, url, server, Path(args.data_dir).resolve(), key_file, key)
        if args.no_api:
            here.say(None)
            run_service(serve_workers(settings, url), settings.event_loop)
        else:  # said once the API listens: a request sent at once is answered
            run_service(serve_with_worker(settings, url, port=args.api_port,
                                          on_ready=lambda api: here.say(api_root(api))),
                        settings.event_loop)
    finally:
        if server is not None:
            server.stop()
    return 0


def up_encryption_key(settings: Settings, data_dir: Path) -> tuple[Settings, Path | None]:
    """The keys ``up`` encrypts with, and the file of its own key when that is used.

    The environment wins: CHATFLOW_ENCRYPTION_KEY, or CHATFLOW_ENCRYPTION_KEYS, which lists
    every key wanted (the rotation runbook puts the file's key there as the older one). The
    file is not added beside KEYS, or the old key could never be removed (docs/operations.md,
    "Rotating the encryption key"). Else up's own key, made once and kept in the data dir."""
    from ..operations.embedded import read_or_make_encryption_key

    if settings.encryption_key_list():
        return settings, None
    encryption_key, key_file = read_or_make_encryption_key(data_dir)
    print(f"encryption key for secret headers and LLM keys in {key_file} (mode 0600; "
          "back it up: what is saved with it cannot be read without it)", file=sys.stderr)
    return settings.model_copy(update={"encryption_key": encryption_key}), key_file


@dataclass(frozen=True, slots=True)
class Ready:
    """What ``chatflow up`` says and keeps for the commands run next to it once it serves."""

    settings: Settings
    url: str
    server: EmbeddedServer | None
    data_dir: Path
    encryption_key_file: Path | None
    key: AdminKey | None

    def say(self, root: str | None) -> None:
        from ..history.db import shown
        from .local_up import without_password, write

        settings = self.settings
        base = f"{root}{settings.api_base_path.rstrip('/')}" if root else None
        if self.key is not None and root is not None:
            print(self.key.text(root, settings.api_base_path), file=sys.stderr)
        print(f"run history in {shown(settings.history_url)}", file=sys.stderr)
        server = self.server
        state = {
            "redisUrl": (f"redis://127.0.0.1:{server.port}/0" if server is not None
                         else without_password(self.url)),
            "redisPasswordFile": (str(server.password_file)
                                  if server is not None and server.password else None),
            "prefix": settings.prefix, "partitions": settings.partitions,
            "historyUrl": without_password(settings.history_url),
            "encryptionKeyFile": str(self.encryption_key_file)
            if self.encryption_key_file else None,
            "adminKeyFile": str(self.key.path) if self.key is not None else None,
            "apiUrl": base, "dataDir": str(self.data_dir)}
        if not settings.up_file:
            print(f"ready. try: REDIS_URL={shell_url(self.url, self.server)} chatflow exec "
                  "--tool pt-greeting --input name=Ana", file=sys.stderr, flush=True)
            return
        kept = write(Path.cwd(), state)
        print(f"commands run in this folder or below it find this chatflow up in {kept}; "
              f"elsewhere: REDIS_URL={shell_url(self.url, self.server)}", file=sys.stderr)
        print("ready. try: chatflow exec --tool pt-greeting --input name=Ana",
              file=sys.stderr, flush=True)

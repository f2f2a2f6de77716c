"""Running the long-lived parts until a signal: the workers, the HTTP API, or both in one loop.

The CLI's ``worker``, ``api`` and ``up`` commands call these; keeping them here (not in one
command module importing another) leaves the command modules independent of each other.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..dataplane.native import load_native_tools
from ..dataplane.worker import Worker
from ..settings import Settings

if TYPE_CHECKING:  # the API (FastAPI, uvicorn, the history's SQLAlchemy) is imported only by
    # the processes that serve it: a worker starts in a fraction of the time without them.
    import uvicorn

# Every signal whose default is to end the process and that a process can catch: a closed
# terminal (SIGHUP) must stop `chatflow up` as cleanly as Ctrl-C, embedded Valkey included.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


async def serve_workers(settings: Settings, url: str, stop: asyncio.Event | None = None,
                        tool_modules: Sequence[str] = ()) -> None:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    worker = Worker(settings, url, native_tools=load_native_tools(tool_modules))
    await worker.start()
    tune_gc(settings.gc_threshold)
    try:
        await stop.wait()
    finally:
        await worker.stop()


def tune_gc(threshold: int) -> None:
    """Freeze what start-up allocated (modules, models, compiled scripts: never garbage) out
    of the collector's sight, and collect young objects less often (Settings.gc_threshold)."""
    if threshold:
        gc.freeze()
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(threshold, gen1, gen2)


def api_server(settings: Settings, host: str | None = None, port: int | None = None
               ) -> uvicorn.Server:
    import uvicorn

    from ..api import create_app

    config = uvicorn.Config(create_app(settings), host=host or settings.api_host,
                            port=settings.api_port if port is None else port,
                            log_config=None, access_log=False, lifespan="on")
    return uvicorn.Server(config)


def announce(settings: Settings, server: uvicorn.Server) -> None:
    base = settings.api_base_path.rstrip("/")
    where = f"http://{server.config.host}:{server.config.port}{base}"
    print(f"API on {where} (OpenAPI: {where}/openapi.json, docs: {where}/docs)", file=sys.stderr)
    print(f"Studio on http://{server.config.host}:{server.config.port}/studio/ "
          "(sign in with an API key)", file=sys.stderr)


async def serve_with_worker(settings: Settings, url: str, host: str | None = None,
                            port: int | None = None) -> None:
    """The workers and the API in one asyncio loop (``chatflow up``); either stopping
    stops both."""
    settings = settings.model_copy(update={"redis_url": url})
    server = api_server(settings, host, port)
    announce(settings, server)
    stop = asyncio.Event()

    async def api() -> None:
        try:
            await server.serve()
        finally:
            stop.set()

    async def watch() -> None:
        await stop.wait()
        server.should_exit = True

    await asyncio.gather(serve_workers(settings, url, stop), api(), watch())

"""Running the long-lived parts until a signal: the workers, the HTTP API, or both in one loop.

The CLI's ``worker``, ``api`` and ``up`` commands call these; keeping them here (not in one
command module importing another) leaves the command modules independent of each other.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
import sys
from collections.abc import Callable, Sequence
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


def api_server(settings: Settings, host: str | None = None, port: int | None = None,
               on_ready: Callable[[uvicorn.Server], None] | None = None) -> uvicorn.Server:
    """The API's server; ``on_ready`` runs once it listens and its start-up (the registry's
    projections) is done, so a request sent the moment it says so is answered."""
    import uvicorn

    from ..api import create_app

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and on_ready is not None:
                on_ready(self)

    config = uvicorn.Config(create_app(settings), host=host or settings.api_host,
                            port=settings.api_port if port is None else port,
                            log_config=None, access_log=False, lifespan="on")
    return Server(config)


def api_root(server: uvicorn.Server) -> str:
    """``http://host:port`` the server answers on: the port it bound once started (port 0
    picks one), the configured one before."""
    host, port = server.config.host, server.config.port
    listening = getattr(server, "servers", None) if server.started else None
    if listening and listening[0].sockets:
        port = listening[0].sockets[0].getsockname()[1]
    return f"http://{host}:{port}"


def announce(settings: Settings, server: uvicorn.Server) -> None:
    root = api_root(server)
    where = f"{root}{settings.api_base_path.rstrip('/')}"
    print(f"API on {where} (OpenAPI: {where}/openapi.json, docs: {where}/docs)", file=sys.stderr)
    print(f"Studio on {root}/studio/ (sign in with an API key)", file=sys.stderr, flush=True)


async def serve_with_worker(settings: Settings, url: str, host: str | None = None,
                            port: int | None = None,
                            on_ready: Callable[[uvicorn.Server], None] | None = None) -> None:
    """The workers and the API in one asyncio loop (``chatflow up``); either stopping
    stops both. ``on_ready``: once the API listens (after its own announcement)."""
    settings = settings.model_copy(update={"redis_url": url})

    def ready(server: uvicorn.Server) -> None:
        announce(settings, server)
        if on_ready is not None:
            on_ready(server)

    server = api_server(settings, host, port, on_ready=ready)
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

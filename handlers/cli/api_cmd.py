"""``chatflow api``: serve the HTTP API against REDIS_URL (``chatflow up`` serves it too)."""

from __future__ import annotations

import argparse
import asyncio
import sys

import uvicorn

from ..api import create_app
from ..logging import configure_logging
from ..settings import Settings
from .common import add_redis_flag, require_url, settings_from


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("api", help="serve the HTTP API (tools, servers, test runs)")
    add_redis_flag(p)
    p.add_argument("--host", default=None, help="default CHATFLOW_API_HOST (127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="default CHATFLOW_API_PORT (8080)")
    p.add_argument("--base-path", default=None, help="default CHATFLOW_API_BASE_PATH (/api)")
    p.set_defaults(handler=cmd_api)


def api_server(settings: Settings, host: str | None = None, port: int | None = None
               ) -> uvicorn.Server:
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


def cmd_api(args: argparse.Namespace) -> int:
    configure_logging()
    settings = settings_from(args)
    if args.base_path is not None:
        settings = settings.model_copy(update={"api_base_path": args.base_path})
    require_url(settings)
    server = api_server(settings, args.host, args.port)
    announce(settings, server)
    asyncio.run(server.serve())
    return 0


async def serve_with_worker(settings: Settings, url: str, host: str | None = None,
                            port: int | None = None) -> None:
    """The workers and the API in one asyncio loop (``chatflow up``); either stopping
    stops both."""
    from .run_cmd import serve

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

    await asyncio.gather(serve(settings, url, stop), api(), watch())

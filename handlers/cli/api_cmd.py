"""``chatflow api``: serve the HTTP API against REDIS_URL (``chatflow up`` serves it too)."""

from __future__ import annotations

import argparse
import asyncio

from ..operations.loop import run_service
from .common import (
    add_redis_flag,
    announce_egress,
    ensure_reachable,
    require_url,
    settings_from,
    warn_without_encryption_key,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("api", help="serve the HTTP API (tools, servers, test runs)")
    add_redis_flag(p)
    p.add_argument("--host", default=None, help="default CHATFLOW_API_HOST (127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="default CHATFLOW_API_PORT (8080)")
    p.add_argument("--base-path", default=None, help="default CHATFLOW_API_BASE_PATH (/api)")
    p.set_defaults(handler=cmd_api)


def cmd_api(args: argparse.Namespace) -> int:
    from ..operations.logging import configure_logging
    from ..operations.serving import announce, api_server

    configure_logging()
    settings = settings_from(args)
    if args.base_path is not None:
        settings = settings.model_copy(update={"api_base_path": args.base_path})
    url = require_url(settings)
    ensure_reachable(settings)
    announce_egress(settings)
    from ..redis_client import check_credentials

    asyncio.run(check_credentials(url, cluster=settings.redis_cluster))
    warn_without_encryption_key(settings)  # once it can start: an unreachable Valkey says one line
    server = api_server(settings, args.host, args.port,
                        on_ready=lambda started: announce(settings, started))
    run_service(server.serve(), settings.event_loop)
    return 0

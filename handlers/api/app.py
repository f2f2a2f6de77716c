"""``create_app(settings)``: the FastAPI application.

Public routes live under ``settings.api_base_path`` (default ``/api``), with the
OpenAPI document at ``{base}/openapi.json`` and its UI at ``{base}/docs``;
``/internal/*`` stays outside the base path. Every error is a 4xx with
``{"error": code, "message": text, "problems": [{"path", "message"}]}``.

Every router under the base path is included with :func:`auth.authenticate` as a
router-level dependency, so no route there answers without a valid API key (the
OpenAPI document and its docs page are served by FastAPI itself, outside the
routers). Body size and JSON depth are capped in front of every route; the Host
header is checked against ``CHATFLOW_API_ALLOWED_HOSTS``; CORS is off unless
``CHATFLOW_API_CORS_ORIGINS`` names origins.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

from chatflow.runtime.errors import ConfigurationError

from ..operations import metrics
from ..redis_client import Client, make_client
from ..registry import ApiCode, RegistryError
from ..settings import Settings
from ..studio import mount as mount_studio
from . import (
    access_routes,
    debug_routes,
    executions_routes,
    internal_routes,
    servers_routes,
    studio_routes,
    tests_routes,
    tools_routes,
    versions_routes,
)
from .auth import authenticate, unguarded_routes
from .contract import document_statuses, refuse_unknown_query, unchecked_routes
from .deps import Services
from .limits import RequestLimits


def _base(path: str) -> str:
    path = "/" + path.strip("/") if path.strip("/") else ""
    return path


def create_app(settings: Settings, client: Client | None = None) -> FastAPI:
    if client is None and not settings.redis_url:
        raise ConfigurationError("REDIS_URL is not set: the API needs the Redis the workers use")
    base = _base(settings.api_base_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = client is None
        redis = client if client is not None else make_client(
            settings.redis_url or "", cluster=settings.redis_cluster)
        services = Services.build(settings, redis)
        app.state.services = services
        await services.registry.start()  # rebuilds the projections when they are missing
        try:
            yield
        finally:
            await services.close()
            if own:
                await redis.aclose()

    app = FastAPI(title="chatflow-agent", version="0.4.0", lifespan=lifespan,
                  description="Tool registry, integration servers and test runs.",
                  openapi_url=f"{base}/openapi.json", docs_url=None, redoc_url=None)

    @app.exception_handler(RegistryError)
    async def registry_error(_request: Request, exc: RegistryError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse(exc.body(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append({"path": path, "message": err.get("msg", "invalid")})
        summary = "; ".join(f"{p['path']}: {p['message']}" for p in problems[:3])
        return JSONResponse({"error": ApiCode.INVALID_REQUEST, "message": f"invalid request: {summary}",
                             "problems": problems}, status_code=400)

    # The key first (no key: 401, whatever the query), then the query string (contract.py).
    strict = Depends(refuse_unknown_query)
    guarded = [Depends(authenticate), strict]
    for router in (studio_routes.router, tools_routes.router, versions_routes.router,
                   tests_routes.router, servers_routes.router, access_routes.router,
                   executions_routes.router, debug_routes.router):
        app.include_router(router, prefix=base, dependencies=guarded)
    app.include_router(internal_routes.router, dependencies=[strict])
    add_edge_middleware(app, settings)
    escaped = unguarded_routes(app, base)
    if escaped:  # a router included without the guard: refuse to serve it at all
        raise ConfigurationError(f"routes under {base} without API key authentication: "
                                 + ", ".join(escaped))
    lax = unchecked_routes(app)
    if lax:
        raise ConfigurationError("routes that would take any query string: " + ", ".join(lax))
    document_statuses(app)
    # Prometheus scrapes the API process too (deploy/prometheus.yml: api:8080/metrics); the
    # Redis-derived values (stream gauges, trees ended) are read at scrape time, as workers do.
    async def refresh() -> None:
        services: Services = app.state.services
        await metrics.refresh_streams(services.client, services.keys)

    app.mount("/metrics", metrics.asgi_app(refresh))
    mount_studio(app, base)  # /studio/ and {base}/docs, from the wheel (no CDN)
    return app


def add_edge_middleware(app: FastAPI, settings: Settings) -> None:
    """Limits, Host allowlist, CORS (the last added runs first: the Host check)."""
    app.add_middleware(RequestLimits, max_body=settings.api_max_body_bytes,
                       max_depth=settings.api_max_json_depth)
    origins = settings.cors_origins()
    if origins:
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_credentials=False,
                           allow_methods=["*"], allow_headers=["Authorization", "Content-Type"])
    hosts = settings.allowed_hosts()
    if hosts != ["*"]:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False)

"""``create_app(settings)``: the FastAPI application.

Public routes live under ``settings.api_base_path`` (default ``/api``), with the
OpenAPI document at ``{base}/openapi.json`` and its UI at ``{base}/docs``;
``/internal/*`` stays outside the base path. Every error is a 4xx with
``{"error": code, "message": text, "problems": [{"path", "message"}]}``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from chatflow.runtime.errors import ConfigurationError

from .. import metrics
from ..redis_client import Client, make_client
from ..registry import RegistryError
from ..settings import Settings
from . import internal_routes, servers_routes, tools_routes
from .deps import Services


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
                  openapi_url=f"{base}/openapi.json", docs_url=f"{base}/docs", redoc_url=None)

    @app.exception_handler(RegistryError)
    async def registry_error(_request: Request, exc: RegistryError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append({"path": path, "message": err.get("msg", "invalid")})
        summary = "; ".join(f"{p['path']}: {p['message']}" for p in problems[:3])
        return JSONResponse({"error": "invalid_request", "message": f"invalid request: {summary}",
                             "problems": problems}, status_code=400)

    app.include_router(tools_routes.router, prefix=base)
    app.include_router(servers_routes.router, prefix=base)
    app.include_router(internal_routes.router)
    # Prometheus scrapes the API process too (deploy/prometheus.yml: api:8080/metrics).
    app.mount("/metrics", metrics.asgi_app())
    return app

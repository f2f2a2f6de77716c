"""Every route of the app, from the app's own route list, so a new route cannot escape."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from chatflow.handlers.api import create_app
from chatflow.handlers.settings import Settings

PUBLIC = {"/api/openapi.json", "/api/docs", "/docs/oauth2-redirect"}


def api_routes(settings: Settings) -> list[tuple[str, str]]:
    """``(method, path with every parameter filled)`` of each route under the base path."""
    app: FastAPI = create_app(settings)
    base = settings.api_base_path.rstrip("/")
    out = []
    for context in iter_route_contexts(app.router.routes):
        route = context.original_route
        path = context.path if hasattr(context, "path") else getattr(route, "path", "")
        if not isinstance(route, APIRoute) or not path.startswith(base + "/") or path in PUBLIC:
            continue
        filled = re.sub(r"\{[^}]+\}", "x-1", path)
        out += [(method, filled) for method in sorted(route.methods or ())]
    assert len(out) > 30, out  # the API's ~35 routes were all found
    return out

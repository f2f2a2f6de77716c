"""Who is calling: the bearer token of every ``/api`` request, and the role checks.

Routers under the base path are mounted with :func:`authenticate` as a router-level
dependency (``create_app``), so a new route is authenticated without asking; a route
adds only its role check, ``Depends(require_role("admin", "editor"))``. The scheme is
FastAPI's ``HTTPBearer``, so the OpenAPI document declares it and the docs page offers
"Authorize".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar, cast

from fastapi import Depends, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..controlplane.apikeys import verify_token
from ..registry.errors import Forbidden, Unauthorized
from ..registry.scope import Scope
from .deps import Services, services

bearer = HTTPBearer(auto_error=False, scheme_name="apiKey",
                    description="An API key: `chatflow keys create --workspace W --role R`.")
WRITERS = ("admin", "editor")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    name: str
    workspace: str
    role: str

    @property
    def scope(self) -> Scope:
        return Scope(self.workspace, self.key_id, self.name)


async def authenticate(request: Request, svc: Annotated[Services, Depends(services)],
                       credentials: Annotated[HTTPAuthorizationCredentials | None,
                                              Depends(bearer)]) -> Principal:
    """The caller's key, read from Redis on every request (revocation is immediate)."""
    if credentials is None:
        raise Unauthorized("send an API key: Authorization: Bearer <token>")
    key, reason = await verify_token(svc.client, svc.keys, credentials.credentials)
    if key is None:
        raise Unauthorized(reason)
    principal = Principal(key.key_id, key.name, key.workspace, key.role)
    request.state.principal = principal
    return principal


def require_role(*roles: str) -> Callable[..., Awaitable[Principal]]:
    """A dependency that answers 403 unless the caller's role is one of ``roles``."""
    async def check(principal: Annotated[Principal, Depends(authenticate)]) -> Principal:
        if principal.role not in roles:
            raise Forbidden(f"a {principal.role} key cannot do this; it needs "
                            f"{' or '.join(roles)}")
        return principal
    return check


Caller = Annotated[Principal, Depends(authenticate)]
Writer = Annotated[Principal, Depends(require_role(*WRITERS))]
Admin = Annotated[Principal, Depends(require_role("admin"))]


def shown_to(principal: Principal, data: T) -> T:
    """What ``principal`` may see of a response: a viewer gets no secret at all, not even
    the mask (secret headers lose their value, credentials their apiKey)."""
    return data if principal.role != "viewer" else cast(T, _without_secrets(data))


def _without_secrets(data: object) -> object:
    if isinstance(data, list):
        return [_without_secrets(item) for item in data]
    if not isinstance(data, dict):
        return data
    out = {k: _without_secrets(v) for k, v in data.items() if k != "apiKey"}
    if data.get("secret") is True:
        out.pop("value", None)
    return out


def unguarded_routes(app: FastAPI, base: str) -> list[str]:
    """Routes under ``base`` that would answer without :func:`authenticate` (the OpenAPI
    document and the docs pages aside): ``create_app`` refuses to start with any."""
    public = (f"{base}/openapi.json", f"{base}/docs")
    out = []
    for context in iter_route_contexts(app.router.routes):
        path = context.path or ""
        if (not isinstance(context.original_route, APIRoute) or not path.startswith(base + "/")
                or path.startswith(public) or path.startswith("/internal/")):
            continue  # /internal/* has its own secret; a base path of "/" holds it too
        dependant = getattr(context, "dependant", None)
        if not isinstance(dependant, Dependant) or not _calls(dependant, authenticate):
            out.append(f"{sorted(context.methods or ())} {path}")
    return out


def _calls(dependant: Dependant, target: object) -> bool:
    return dependant.call is target or any(_calls(d, target) for d in dependant.dependencies)

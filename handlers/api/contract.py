"""What every route answers besides its own success, in one place.

* **Strict query strings.** :func:`refuse_unknown_query` runs on every route (``create_app``
  adds it beside the API key check, and refuses to start if a route escapes it): a query
  parameter the route does not declare is a 400 naming it, with the parameters the route
  takes and the closest one. ``?contact=C`` on ``GET /executions`` (whose filter is
  ``contactId``) once returned every contact's runs, and support believed it had filtered.
* **The status codes in the OpenAPI document** are the ones a route answers: what every route
  shares is added here (400 for a bad request or an unknown query parameter, 401 without a
  valid key, 403 when a role check guards the route, 413 when it takes a body), FastAPI's 422
  goes (validation errors are 400s here), and a route names its own others with
  ``responses=answers(404, 409)`` on its decorator. Every error has one body, :class:`ErrorBody`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel, ConfigDict

from ..registry.errors import ApiCode, Invalid
from .auth import authenticate


class Problem(BaseModel):
    path: str
    message: str


class ErrorBody(BaseModel):
    """Every 4xx and 503: a stable code, a sentence, and the fields at fault."""

    model_config = ConfigDict(extra="allow")  # a few errors add fields (usedBy, for one)
    error: str
    message: str
    problems: list[Problem] | None = None


WHY: dict[int, str] = {
    202: "Accepted: started; the answer comes on its reply stream",
    400: "Bad input: a field, a definition, or a query parameter the route does not take",
    401: "No API key, or an unknown, revoked or expired one (internal routes: the secret)",
    403: "The key's role does not allow this",
    404: "Not found, in the trash, or another workspace's",
    409: "Conflicts with the current state (taken, in use, changed meanwhile)",
    413: "The body is larger than CHATFLOW_API_MAX_BODY_BYTES",
    429: "The key, its workspace or this API process holds as many long requests as allowed "
         "(CHATFLOW_API_HELD_*)",
    503: "The run history is not configured or cannot answer",
}


def answers(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route's own statuses beyond those every route shares."""
    return {code: ({"description": WHY[code]} if code < 400
                   else {"model": ErrorBody, "description": WHY[code]}) for code in codes}


def _query_names(dependant: Dependant) -> Iterator[str]:
    for field in dependant.query_params:
        yield field.alias
    for sub in dependant.dependencies:
        yield from _query_names(sub)


def _calls(dependant: Dependant, test: Callable[[Any], bool]) -> bool:
    return test(dependant.call) or any(_calls(d, test) for d in dependant.dependencies)


async def refuse_unknown_query(request: Request) -> None:
    """400 for a query parameter the matched route does not declare, naming it."""
    if not request.query_params:
        return
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    accepted = sorted(set(_query_names(route.dependant)))
    unknown = [name for name in dict.fromkeys(request.query_params.keys())
               if name not in accepted]
    if not unknown:
        return
    takes = f"it takes {', '.join(accepted)}" if accepted else "it takes none"
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
        hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    noun = "parameter" if len(unknown) == 1 else "parameters"
    raise Invalid(f"unknown query {noun} {', '.join(hints)} for {request.method} "
                  f"{request.url.path}: {takes}", code=ApiCode.INVALID_REQUEST,
                  problems=[f"query.{name}: not a query parameter of this route"
                            for name in unknown])


def unchecked_routes(app: FastAPI) -> list[str]:
    """Routes of the API (those its OpenAPI document lists; the docs page is a page) that
    would accept any query string: ``create_app`` refuses to start with any."""
    return [f"{sorted(c.methods or ())} {c.path}" for c in iter_route_contexts(app.router.routes)
            if isinstance(c.original_route, APIRoute) and c.original_route.include_in_schema
            and not _calls(c.dependant, lambda call: call is refuse_unknown_query)]


def document_statuses(app: FastAPI) -> None:
    """Make ``app.openapi()`` list what each route answers (see the module's docstring)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        error_ref = _error_schema(schema)
        for context in iter_route_contexts(app.router.routes):
            if not isinstance(context.original_route, APIRoute):
                continue
            shared = [400]
            if _calls(context.dependant, lambda call: call is authenticate):
                shared.append(401)
            if _calls(context.dependant, _is_role_check):
                shared.append(403)
            if context.dependant.body_params:
                shared.append(413)
            for method in context.methods or ():
                operation = schema["paths"].get(context.path, {}).get(method.lower())
                if operation is not None:
                    _amend(operation, shared, error_ref)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _is_role_check(call: Any) -> bool:
    """A check made by ``auth.require_role``: it answers 403 to a role it does not admit."""
    return str(getattr(call, "__qualname__", "")).startswith("require_role.")


def _error_schema(schema: dict[str, Any]) -> dict[str, str]:
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    if "ErrorBody" not in schemas:
        schemas["Problem"] = Problem.model_json_schema()
        body = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        body.pop("$defs", None)
        schemas["ErrorBody"] = body
    return {"$ref": "#/components/schemas/ErrorBody"}


def _amend(operation: dict[str, Any], shared: list[int], error_ref: dict[str, str]) -> None:
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    for code in shared:
        responses.setdefault(str(code), {
            "description": WHY[code],
            "content": {"application/json": {"schema": error_ref}}})

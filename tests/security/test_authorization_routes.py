"""Every route that accepts a definition or starts an execution goes through the one
authorization function (``handlers.api.authorization.authorize``), found by walking the
app's own route table: a route added later that skips it fails here."""

from __future__ import annotations

import inspect
import re
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel

from chatflow.handlers.api import create_app
from chatflow.handlers.api.authorization import authorize, authorize_internal
from chatflow.handlers.settings import Settings

# What a definition arrives as in a body.
DEFINITION_FIELDS = {"definition", "block", "blocks"}
# What starts an execution from a route: the inline runner (test runs), a fork, a publish
# (a published tool is what commands run), a rollback, saved test cases.
STARTS = re.compile(r"\.inline\.run\(|start_fork\(|\.publish\(|publish_gated\(|\.rollback\(|"
                    r"rollback_gated\(|run_cases\(")


def _fields(annotation: Any) -> set[str]:
    names: set[str] = set()
    for arg in getattr(annotation, "__args__", ()) or ():
        names |= _fields(arg)
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        names |= set(annotation.model_fields)
    return names


def accepts_definition(dependant: Dependant) -> bool:
    for param in dependant.body_params:
        if param.name in DEFINITION_FIELDS:
            return True
        if _fields(param.field_info.annotation) & DEFINITION_FIELDS:
            return True
    return False


def starts_execution(route: APIRoute) -> bool:
    return bool(STARTS.search(inspect.getsource(route.endpoint)))


def calls(dependant: Dependant, target: object) -> bool:
    return dependant.call is target or any(calls(d, target) for d in dependant.dependencies)


def test_every_route_that_takes_a_definition_or_starts_a_run_is_authorized() -> None:
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"))  # routes only: no I/O
    guarded, skipped = [], []
    for context in iter_route_contexts(app.router.routes):
        route = context.original_route
        if not isinstance(route, APIRoute):
            continue
        dependant = getattr(context, "dependant", None) or route.dependant
        if not (accepts_definition(dependant) or starts_execution(route)):
            continue
        name = f"{sorted(route.methods or ())} {getattr(context, 'path', None) or route.path}"
        authorized = calls(dependant, authorize) or calls(dependant, authorize_internal)
        (guarded if authorized else skipped).append(name)
    assert skipped == [], f"routes that skip handlers.api.authorization.authorize: {skipped}"
    # The walk finds what it must (so an empty list above means something).
    for known in ("['POST'] /api/tools/test-flow", "['POST'] /api/tools/test-block",
                  "['POST'] /api/tools/{tool_id}/publish", "['POST'] /api/tools",
                  "['PATCH'] /api/tools/{tool_id}", "['POST'] /api/definitions/check",
                  "['POST'] /api/executions/{execution_id}/fork",
                  "['POST'] /internal/tools/execute", "['POST'] /api/tools/{tool_id}/rollback",
                  "['POST'] /api/tools/{tool_id}/tests/run"):
        assert known in guarded, (known, guarded)

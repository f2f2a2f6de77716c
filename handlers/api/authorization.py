"""The one authorization layer for what runs: every route that accepts a definition or
starts an execution depends on :func:`authorize` (``Authorized``), and checks what it will
run with :func:`refuse_unresolved`.

* :func:`authorize` fixes the workspace: the caller's key's. It returns a
  :class:`~chatflow.handlers.registry.scope.Grant`; the inline runner and a fork take the
  grant, so a test run, a fork and every child they spawn run in that workspace (the runtime
  then resolves each callTool, callEndpoint and callAI inside it: runtime/tenancy.py).
* :func:`refuse_unresolved` is the early refusal (a 400 before anything runs): every
  reference of the definition must name an object of the grant's workspace. It asks the
  registry's publish check (``check_references``), so a reference to another workspace's
  object, to a fork's record or to nothing at all reads the same, and existence does not
  leak.

``tests/security/test_authorization_routes.py`` walks the route table and fails on a route
that accepts a definition or starts an execution without :func:`authorize`.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

import msgspec
from fastapi import Depends, Header

from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.registry.validation import check_references
from chatflow.runtime.validation import parse_definition
from chatflow.schemas.definition import PublishedTool, ToolDefinition

from ..registry.errors import ApiCode, Invalid, Unauthorized
from ..registry.scope import Grant
from .auth import Writer
from .deps import Services, services


async def authorize(who: Writer) -> Grant:
    """The caller may run and check definitions in its key's workspace (editors and admins;
    a viewer gets 403 from ``Writer``)."""
    return Grant(who.workspace, who.key_id, who.name)


Authorized = Annotated[Grant, Depends(authorize)]


def check_secret(expected: str | None, given: str | None) -> None:
    """Constant-time comparison (hmac.compare_digest); 401 when missing or wrong."""
    if not expected:
        raise Unauthorized("internal routes are disabled: CHATFLOW_INTERNAL_SECRET is not set",
                           code=ApiCode.INTERNAL_DISABLED)
    if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Unauthorized("missing or wrong x-internal-secret header")


async def authorize_internal(svc: Annotated[Services, Depends(services)],
                             x_internal_secret: Annotated[str | None, Header()] = None) -> None:
    """``/internal/*``: server to server, with ``x-internal-secret`` instead of a key; what
    runs there runs in its own tool's workspace (:func:`for_internal`)."""
    check_secret(svc.settings.internal_secret, x_internal_secret)


def for_internal(published: PublishedTool | ToolFailure) -> Grant:
    """``/internal/tools/execute`` (its own secret, no key): the published tool runs in its
    own workspace, as a command naming it would."""
    workspace = published.workspace if isinstance(published, PublishedTool) else "default"
    return Grant(workspace, "internal")


def unresolved(svc: Services, grant: Grant, definition: ToolDefinition) -> list[str]:
    """Problems of ``definition``'s references in the grant's workspace (empty: all resolve)."""
    return check_references(svc.registry.state, definition, grant.workspace)


def problems_of(svc: Services, grant: Grant, raw: Any) -> tuple[ToolDefinition | None, list[str]]:
    """``raw`` parsed, and every problem by JSON path (``definition.…``): its shape, and every
    callTool, callEndpoint or callAI that does not resolve in the grant's workspace. The
    caller has caught the registry up."""
    oversized(svc, raw)
    parsed, problems = parse_definition(raw)
    problems = [f"definition.{p}" for p in problems]
    if parsed is not None:
        problems += unresolved(svc, grant, parsed)
    return parsed, problems


def oversized(svc: Services, raw: Any) -> None:
    """A 400 for a definition over ``CHATFLOW_DEFINITION_MAX_BYTES``."""
    size = len(msgspec.json.encode(raw))
    cap = svc.settings.definition_max_bytes
    if size > cap:
        raise Invalid(f"definition: {size} bytes of JSON, over the {cap} that "
                      "CHATFLOW_DEFINITION_MAX_BYTES allows", code=ApiCode.DEFINITION_TOO_LARGE)


def refuse_unresolved_references(svc: Services, grant: Grant, raw: Any) -> None:
    """A 400 naming every callTool, callEndpoint or callAI of ``raw`` that does not resolve in
    the grant's workspace; a definition whose shape is wrong is left to its caller's own
    check (a fork names a block the definition lacks more usefully than its parser)."""
    oversized(svc, raw)
    parsed, _shape = parse_definition(raw)
    problems = unresolved(svc, grant, parsed) if parsed is not None else []
    if problems:
        raise Invalid(f"the definition cannot run: {len(problems)} problem(s)",
                      code=ApiCode.INVALID_DEFINITION, problems=problems)


def refuse_unresolved(svc: Services, grant: Grant, raw: Any) -> ToolDefinition:
    """``raw`` parsed, or a 400 naming every problem of :func:`problems_of`."""
    parsed, problems = problems_of(svc, grant, raw)
    if parsed is None or problems:
        raise Invalid(f"the definition cannot run: {len(problems)} problem(s)",
                      code=ApiCode.INVALID_DEFINITION, problems=problems)
    return parsed

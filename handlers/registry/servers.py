"""Integration servers, their endpoints, LLM credentials: CRUD, OpenAPI import, test calls.

Secret header values and API keys are encrypted before they enter the log; the
views the API returns mask them, and only the cache projections hold them in
clear (``handlers.registry.projector``).
"""

from __future__ import annotations

import json
from typing import Any

from chatflow.runtime.blocks.endpoint import call_endpoint
from chatflow.runtime.edge import Gated, server_edge
from chatflow.runtime.errors import ToolFailure
from chatflow.runtime.limits import Limits
from chatflow.runtime.masking import mask, mask_text
from chatflow.runtime.origins import origin_of
from chatflow.runtime.outbound import Outbound
from chatflow.runtime.registry import DEFAULT_WORKSPACE, RegistryState, workspace_of
from chatflow.runtime.registry.rebinding import header_origin, keep_bound, rebind_endpoints
from chatflow.runtime.registry.state import Record
from chatflow.runtime.registry.views import (
    MASK,
    credential_origin,
    credential_view,
    endpoint_view,
    server_cache,
    server_view,
)
from chatflow.schemas.definition import CallEndpointParamMapping

from ..dataplane.edge import SharedGate, circuit_view
from .errors import ApiCode, Conflict, Invalid, NotFound
from .log import Append
from .models import (
    SERVER_EDGE_FIELDS,
    AdhocEndpointTest,
    CredentialCreate,
    CredentialPatch,
    EndpointCreate,
    EndpointPatch,
    EndpointTest,
    HeaderIn,
    ServerCreate,
    ServerPatch,
)
from .openapi_import import parse_spec
from .registry import Registry
from .reply_headers import secret_values, shown_headers
from .scope import SHELL, Scope
from .tools import check_version, graph, new_id


def get_server(state: RegistryState, server_id: str,
               workspace: str = DEFAULT_WORKSPACE) -> Record:
    server = state.server_in(server_id, workspace)
    if server is None:
        raise NotFound(f"no integration server {server_id!r}")
    return server


def get_endpoint(state: RegistryState, server_id: str, endpoint_id: str,
                 workspace: str = DEFAULT_WORKSPACE) -> Record:
    endpoint = get_server(state, server_id, workspace)["endpoints"].get(endpoint_id)
    if endpoint is None:
        raise NotFound(f"no endpoint {endpoint_id!r} on integration server {server_id!r}")
    return dict(endpoint)


def _used(state: RegistryState, server_id: str, endpoint_id: str | None, what: str,
          workspace: str) -> None:
    users = state.tools_using_server(server_id, endpoint_id, workspace)
    if users:
        names = ", ".join(f"{t['name']} ({t['id']})" for t in users)
        raise Conflict(f"{what} is used by tools: {names}", code=ApiCode.IN_USE,
                       usedBy=[{"id": t["id"], "name": t["name"]} for t in users])


def _server_versions(server: Record) -> tuple[dict[str, str], dict[str, str]]:
    name = f"server:{server['id']}"
    return {name: str(server["version"])}, {name: str(server["version"] + 1)}


class ServerOps:
    def __init__(self, registry: Registry, http: Outbound, limits: Limits) -> None:
        self.registry = registry
        self.http = http
        self.limits = limits
        self._shared_gate: SharedGate | None = None

    def _gate(self) -> SharedGate:
        """The gate of servers' limits and circuits (made on first use: the registry's client)."""
        if self._shared_gate is None:
            self._shared_gate = SharedGate(self.registry.client, self.registry.keys,
                                           lease_ms=max(1_000, self.limits.http_timeout_ms * 2))
        return self._shared_gate

    @property
    def state(self) -> RegistryState:
        return self.registry.state

    def _headers(self, headers: list[HeaderIn], origin: str, old: list[Record] | None = None,
                 old_origin: str = "") -> tuple[list[Record], list[str]]:
        """Secret values encrypted and bound to ``origin``; a secret sent back masked keeps
        its stored value while it is bound to ``origin``, and is cleared (its name in the
        second list) when it was saved for another origin."""
        previous = {h["name"].lower(): h for h in old or [] if h.get("secret")}
        out: list[Record] = []
        cleared: list[str] = []
        for i, h in enumerate(headers):
            record: Record = {"name": h.name, "value": h.value, "secret": h.secret}
            if h.secret and h.value == MASK:
                kept = previous.get(h.name.lower())
                if kept is None:
                    raise Invalid(f"headers[{i}].value: the mask {MASK} is not a secret; send "
                                  "the real value", code=ApiCode.MASK_IS_NOT_A_SECRET)
                if header_origin(kept, old_origin) != origin:
                    cleared.append(h.name)
                    continue
                record.update(value=kept["value"], origin=origin)
            elif h.secret:
                record.update(value=self.registry.box.encrypt(h.value), origin=origin)
            out.append(record)
        return out, cleared

    # -- servers ------------------------------------------------------------------

    async def list_all(self, *, scope: Scope = SHELL) -> list[Record]:
        await self.registry.catch_up()
        views = await self.registry.client.hgetall(self.registry.keys.registry_view("servers"))
        out = []
        for raw in views.values():
            view = json.loads(raw)
            if workspace_of(view) != scope.workspace:
                continue
            users = self.state.tools_using_server(view["id"], None, scope.workspace)
            view["usedBy"] = [{"toolId": t["id"], "name": t.get("name", "")} for t in users]
            view["metrics"] = {"endpoints": len(view.get("endpoints", [])), "usedBy": len(users)}
            out.append(view)
        return sorted(out, key=lambda v: (v.get("createdAt") or "", v["id"]))

    async def view(self, server_id: str, *, scope: Scope = SHELL) -> Record:
        """The server, its usage, and its circuit as every worker sees it now."""
        await self.registry.catch_up()
        server = get_server(self.state, server_id, scope.workspace)
        view = server_view(server, self.state.tools_using_server(server_id, None,
                                                                 scope.workspace))
        edge = server_edge(server_id, server)
        breaker = edge.breaker if not isinstance(edge, ToolFailure) else None
        view["circuit"] = await circuit_view(self.registry.client, self.registry.keys,
                                             server_id, breaker)
        return view

    async def create(self, body: ServerCreate, *, scope: Scope = SHELL) -> Record:
        server_id = body.id or new_id("srv")
        headers, _ = self._headers(body.headers, origin_of(body.baseUrl))

        def build(state: RegistryState) -> Append:
            if server_id in state.servers:  # ids are global (integration:server:{id})
                raise Conflict(f"the integration server id {server_id!r} is taken",
                               code=ApiCode.SERVER_EXISTS)
            record = {"id": server_id, "name": body.name, "baseUrl": body.baseUrl,
                      "description": body.description, "headers": headers,
                      **body.model_dump(mode="json", include=set(SERVER_EDGE_FIELDS),
                                        exclude_unset=True)}
            return Append({"type": "server.created", "server": record},
                          {f"server:{server_id}": "0"}, {f"server:{server_id}": "1"})

        await self.registry.commit(build, scope)
        return await self.view(server_id, scope=scope)

    async def update(self, server_id: str, body: ServerPatch, *, scope: Scope = SHELL) -> Record:
        """The server as updated, plus ``secretsCleared``: the secrets dropped because the
        baseUrl moved to another origin without new values in the same request."""
        cleared: list[str] = []

        def build(state: RegistryState) -> Append:
            server = get_server(state, server_id, scope.workspace)
            check_version(server, body.version, f"integration server {server_id!r}")
            changes = body.model_dump(mode="json", exclude_unset=True,
                                      exclude={"version", "headers"})
            old_origin = origin_of(str(server.get("baseUrl") or ""))
            origin = origin_of(body.baseUrl) if body.baseUrl else old_origin
            cleared.clear()
            if body.headers is not None:
                changes["headers"], gone = self._headers(body.headers, origin,
                                                         server.get("headers"), old_origin)
            else:
                kept, gone = keep_bound(server.get("headers") or [], origin, old_origin)
                if gone:
                    changes["headers"] = kept
            cleared.extend(f"headers.{name}" for name in gone)
            endpoints, gone = rebind_endpoints(server["endpoints"], origin, old_origin)
            if endpoints is not None:
                changes["endpoints"] = endpoints
            cleared.extend(gone)
            expect, sets = _server_versions(server)
            return Append({"type": "server.updated", "id": server_id, "changes": changes},
                          expect, sets)

        await self.registry.commit(build, scope)
        return {**await self.view(server_id, scope=scope), "secretsCleared": cleared}

    async def delete(self, server_id: str, *, scope: Scope = SHELL) -> Record:
        def build(state: RegistryState) -> Append:
            server = get_server(state, server_id, scope.workspace)
            _used(state, server_id, None, f"integration server {server_id!r}", scope.workspace)
            expect, sets = graph(state)
            expect[f"server:{server_id}"] = str(server["version"])
            sets[f"server:{server_id}"] = ""
            return Append({"type": "server.deleted", "id": server_id}, expect, sets)

        await self.registry.commit(build, scope)
        return {"id": server_id, "deleted": True}

    # -- endpoints ----------------------------------------------------------------

    async def endpoints(self, server_id: str, *, scope: Scope = SHELL) -> list[Record]:
        await self.registry.catch_up()
        server = get_server(self.state, server_id, scope.workspace)
        return [endpoint_view(e) for e in server["endpoints"].values()]

    def _endpoint_record(self, endpoint_id: str, body: EndpointCreate, origin: str) -> Record:
        record = body.model_dump(mode="json", by_alias=True, exclude={"id", "headers"})
        record["id"] = endpoint_id
        record["headers"], _ = self._headers(body.headers, origin)
        return record

    async def add_endpoint(self, server_id: str, body: EndpointCreate, *,
                           scope: Scope = SHELL) -> Record:
        endpoint_id = body.id or new_id("ep")

        def build(state: RegistryState) -> Append:
            server = get_server(state, server_id, scope.workspace)
            if endpoint_id in server["endpoints"]:
                raise Conflict(f"endpoint {endpoint_id!r} exists on server {server_id!r}",
                               code=ApiCode.ENDPOINT_EXISTS)
            record = self._endpoint_record(endpoint_id, body, _origin(server))
            expect, sets = _server_versions(server)
            return Append({"type": "endpoint.created", "serverId": server_id,
                           "endpoint": record}, expect, sets)

        await self.registry.commit(build, scope)
        return endpoint_view(get_endpoint(self.state, server_id, endpoint_id, scope.workspace))

    async def update_endpoint(self, server_id: str, endpoint_id: str,
                              body: EndpointPatch, *, scope: Scope = SHELL) -> Record:
        def build(state: RegistryState) -> Append:
            server = get_server(state, server_id, scope.workspace)
            endpoint = get_endpoint(state, server_id, endpoint_id, scope.workspace)
            check_version(server, body.version, f"integration server {server_id!r}")
            changes = body.model_dump(mode="json", by_alias=True, exclude_unset=True,
                                      exclude={"version", "headers"})
            if body.headers is not None:
                origin = _origin(server)
                changes["headers"], _ = self._headers(body.headers, origin,
                                                      endpoint.get("headers"), origin)
            expect, sets = _server_versions(server)
            return Append({"type": "endpoint.updated", "serverId": server_id, "id": endpoint_id,
                           "changes": changes}, expect, sets)

        await self.registry.commit(build, scope)
        return endpoint_view(get_endpoint(self.state, server_id, endpoint_id, scope.workspace))

    async def delete_endpoint(self, server_id: str, endpoint_id: str, *,
                              scope: Scope = SHELL) -> Record:
        def build(state: RegistryState) -> Append:
            server = get_server(state, server_id, scope.workspace)
            get_endpoint(state, server_id, endpoint_id, scope.workspace)
            _used(state, server_id, endpoint_id, f"endpoint {endpoint_id!r}", scope.workspace)
            expect, sets = graph(state)
            e2, s2 = _server_versions(server)
            return Append({"type": "endpoint.deleted", "serverId": server_id, "id": endpoint_id},
                          {**expect, **e2}, {**sets, **s2})

        await self.registry.commit(build, scope)
        return {"id": endpoint_id, "serverId": server_id, "deleted": True}

    async def import_openapi(self, server_id: str, text: str, *,
                             scope: Scope = SHELL) -> list[Record]:
        await self.registry.catch_up()
        get_server(self.state, server_id, scope.workspace)
        drafts = await parse_spec(text)
        if not drafts:
            raise Invalid("the OpenAPI spec declares no operations under 'paths'",
                          code=ApiCode.INVALID_OPENAPI)
        records = [{**d, "id": new_id("ep"), "headers": [], "bodyTemplate": None}
                   for d in drafts]

        def build(state: RegistryState) -> Append:
            expect, sets = _server_versions(get_server(state, server_id, scope.workspace))
            return Append({"type": "endpoints.imported", "serverId": server_id,
                           "endpoints": records}, expect, sets)

        await self.registry.commit(build, scope)
        return [endpoint_view(get_endpoint(self.state, server_id, r["id"], scope.workspace))
                for r in records]

    # -- test calls against the real API -----------------------------------------

    async def test(self, server_id: str, endpoint_id: str, body: EndpointTest, *,
                   scope: Scope = SHELL) -> Record:
        await self.registry.catch_up()
        get_endpoint(self.state, server_id, endpoint_id, scope.workspace)
        config = server_cache(get_server(self.state, server_id, scope.workspace),
                              self.registry.box.decrypt)
        return await self._call(config, server_id, endpoint_id, body)

    async def test_adhoc(self, server_id: str, body: AdhocEndpointTest, *,
                         scope: Scope = SHELL) -> Record:
        await self.registry.catch_up()
        server = dict(get_server(self.state, server_id, scope.workspace))
        record = self._endpoint_record("adhoc", EndpointCreate(**body.endpoint.model_dump()),
                                       _origin(server))
        server["endpoints"] = {"adhoc": record}
        config = server_cache(server, self.registry.box.decrypt)
        return await self._call(config, server_id, "adhoc", body)

    async def _call(self, config: Record, server_id: str, endpoint_id: str,
                    body: EndpointTest) -> Record:
        mappings = [CallEndpointParamMapping.model_validate(m.model_dump(by_alias=True))
                    for m in body.paramMappings]
        # A test call counts against the server's limits and circuit like a run's: a person
        # pressing Test must not push a limited server past its limit.
        sender: Outbound | Gated = self.http
        edge = server_edge(server_id, config)
        scope = None if isinstance(edge, ToolFailure) else edge.scope(server_id, "default")
        if scope is not None:
            sender = Gated(self.http, self._gate(), scope, None)  # no tree, no deadline
        call = await call_endpoint(sender, config, server_id, endpoint_id, mappings,
                                   body.variables, {}, timeout_ms=self.limits.http_timeout_ms,
                                   max_chars=self.limits.max_rendered_chars)
        # What went out carried the server's secrets; what comes back is masked by the one
        # policy, so an upstream that echoes one (in a header, the body or an error) shows
        # the mask to whoever pressed Test.
        secrets = secret_values(config, endpoint_id)
        error = ({"code": call.error.code, "message": mask_text(call.error.message, secrets)}
                 if call.error else None)
        return {"ok": call.error is None, "method": call.method,
                "url": mask_text(call.url, secrets), "status": call.status,
                "body": mask(call.body, secrets), "error": error,
                "durationMs": call.duration_ms, "headers": shown_headers(call.headers, secrets)}


class CredentialOps:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def list_all(self, *, scope: Scope = SHELL) -> list[Record]:
        await self.registry.catch_up()
        return [credential_view(c) for c in self.registry.state.credentials.values()
                if workspace_of(c) == scope.workspace]

    async def view(self, cred_id: str, *, scope: Scope = SHELL) -> Record:
        await self.registry.catch_up()
        return credential_view(self._get(self.registry.state, cred_id, scope.workspace))

    @staticmethod
    def _get(state: RegistryState, cred_id: str, workspace: str) -> Record:
        cred = state.credential_in(cred_id, workspace)
        if cred is None:
            raise NotFound(f"no LLM credential {cred_id!r}")
        return cred

    async def create(self, body: CredentialCreate, *, scope: Scope = SHELL) -> Record:
        cred_id = body.id or new_id("cred")
        if body.apiKey == MASK:
            raise Invalid(f"apiKey: the mask {MASK} is not an API key; send the real key",
                          code=ApiCode.MASK_IS_NOT_A_SECRET)
        record = {"id": cred_id, "name": body.name, "provider": body.provider,
                  "baseUrl": body.baseUrl, "apiKey": self.registry.box.encrypt(body.apiKey),
                  "apiKeyOrigin": credential_origin(body.baseUrl)}

        def build(state: RegistryState) -> Append:
            if cred_id in state.credentials:  # ids are global (llm:credential:{id})
                raise Conflict(f"the LLM credential id {cred_id!r} is taken",
                               code=ApiCode.CREDENTIAL_EXISTS)
            return Append({"type": "credential.created", "credential": record},
                          {f"credential:{cred_id}": "0"}, {f"credential:{cred_id}": "1"})

        await self.registry.commit(build, scope)
        return await self.view(cred_id, scope=scope)

    async def update(self, cred_id: str, body: CredentialPatch, *, scope: Scope = SHELL) -> Record:
        """The credential as updated, plus ``secretsCleared`` (``["apiKey"]`` when the
        baseUrl moved to another origin without a new apiKey). ``apiKey`` sent back as the
        mask means "keep"."""
        changes: dict[str, Any] = body.model_dump(mode="json", exclude_unset=True,
                                                  exclude={"version", "apiKey"})
        new_key = body.apiKey if body.apiKey not in (None, MASK) else None
        secret = self.registry.box.encrypt(new_key) if new_key is not None else None
        cleared: list[str] = []

        def build(state: RegistryState) -> Append:
            cred = self._get(state, cred_id, scope.workspace)
            check_version(cred, body.version, f"LLM credential {cred_id!r}")
            base_url = changes["baseUrl"] if "baseUrl" in changes else cred.get("baseUrl")
            origin = credential_origin(base_url)
            bound = cred.get("apiKeyOrigin") or credential_origin(cred.get("baseUrl"))
            update = dict(changes)
            cleared.clear()
            if secret is not None:
                update.update(apiKey=secret, apiKeyOrigin=origin)
            elif origin != bound:
                update.update(apiKey=None, apiKeyOrigin=origin)
                if cred.get("apiKey"):
                    cleared.append("apiKey")
            name = f"credential:{cred_id}"
            return Append({"type": "credential.updated", "id": cred_id, "changes": update},
                          {name: str(cred["version"])}, {name: str(cred["version"] + 1)})

        await self.registry.commit(build, scope)
        return {**await self.view(cred_id, scope=scope), "secretsCleared": cleared}

    async def delete(self, cred_id: str, *, scope: Scope = SHELL) -> Record:
        def build(state: RegistryState) -> Append:
            cred = self._get(state, cred_id, scope.workspace)
            users = [t for t in state.tools.values() if not t.get("deletedAt")
                     and workspace_of(t) == scope.workspace and _calls_ai(t, cred_id)]
            if users:
                names = ", ".join(f"{t['name']} ({t['id']})" for t in users)
                raise Conflict(f"LLM credential {cred_id!r} is used by published tools: {names}",
                               code=ApiCode.IN_USE)
            expect, sets = graph(state)
            expect[f"credential:{cred_id}"] = str(cred["version"])
            sets[f"credential:{cred_id}"] = ""
            return Append({"type": "credential.deleted", "id": cred_id}, expect, sets)

        await self.registry.commit(build, scope)
        return {"id": cred_id, "deleted": True}


def _origin(server: Record) -> str:
    return origin_of(str(server.get("baseUrl") or ""))


def _calls_ai(tool: Record, cred_id: str) -> bool:
    definition = (tool.get("publishedTool") or {}).get("definition") or {}
    return any(isinstance(b, dict) and b.get("type") == "callAI"
               and b.get("llmCredentialId") == cred_id
               for b in (definition.get("blocks") or {}).values())

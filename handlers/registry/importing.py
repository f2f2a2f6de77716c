"""``chatflow import DIR``: apply exported files to a workspace, after a plan of what changes.

The plan names each object and what importing does to it: ``create``, ``update`` (with the
fields that differ), ``unchanged``, or ``refused`` (with why: a malformed file, an id taken
in another workspace, a secret placeholder whose environment variable is not set, a tool in
the trash). Any refusal applies nothing. Otherwise the steps run in order: credentials,
servers and their endpoints, tools, their test cases, then, with ``--publish``, every tool
the files say is published, callees before their callers, each under its publishedToolId (so
flows keep calling it) and through the publish gate. Run twice, the second plan is all
``unchanged``: an import is idempotent. Secrets are compared by decrypting what is stored;
their values come from ``CHATFLOW_SECRET_*`` environment variables (``settings.secret_values``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from chatflow.runtime.registry import RegistryState
from chatflow.runtime.registry.state import Record
from chatflow.runtime.registry.validation import call_targets

from .case_models import CaseIn
from .errors import ApiCode, Invalid, RegistryError
from .gate import publish_gated
from .models import (
    CredentialCreate,
    CredentialPatch,
    EndpointCreate,
    EndpointPatch,
    ServerCreate,
    ServerPatch,
    ToolCreate,
    ToolPatch,
)
from .scope import Scope
from .servers import CredentialOps, ServerOps
from .testcases import CaseOps, CaseRunner
from .tools import ToolOps
from .transfer import KINDS, case_file, credential_file, join_positions, server_file

Apply = Callable[[], Awaitable[Any]]


@dataclass
class Step:
    kind: str  # tool, server, endpoint, credential, test, publish
    ident: str
    action: str  # create, update, unchanged, publish, refused
    detail: str = ""
    run: Apply | None = field(default=None, repr=False)

    def line(self) -> str:
        text = f"{self.action:<10} {self.kind} {self.ident}"
        return f"{text}: {self.detail}" if self.detail else text


def load(root: Path) -> dict[str, list[tuple[str, Any]]]:
    """``{kind: [(file, parsed JSON or the error text)]}``, files in name order."""
    if not root.is_dir():
        raise Invalid(f"{root}: not a folder (export one with `chatflow export DIR`)")
    out: dict[str, list[tuple[str, Any]]] = {}
    for kind in KINDS:
        items = []
        for path in sorted((root / kind).glob("*.json")) if (root / kind).is_dir() else []:
            try:
                items.append((f"{kind}/{path.name}", json.loads(path.read_text("utf-8"))))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                items.append((f"{kind}/{path.name}", f"not JSON: {exc}"))
        out[kind] = items
    return out


def placeholders(value: Any) -> set[str]:
    """Every ``{"secret": NAME}`` placeholder inside ``value``."""
    if isinstance(value, dict):
        if set(value) == {"secret"} and isinstance(value["secret"], str):
            return {value["secret"]}
        return set().union(*(placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(placeholders(v) for v in value)) if value else set()
    return set()


def _model(cls: type[BaseModel], data: dict[str, Any], where: str) -> Any:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise Invalid(f"{where}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
                      ) from exc


def _differs(old: Record, new: Record) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


class Importer:
    def __init__(self, tools: ToolOps, servers: ServerOps, credentials: CredentialOps,
                 cases: CaseOps, runner: CaseRunner, scope: Scope,
                 secrets: dict[str, str]) -> None:
        self.tools = tools
        self.servers = servers
        self.credentials = credentials
        self.cases = cases
        self.runner = runner
        self.scope = scope
        self.secrets = secrets
        self.box = tools.registry.box

    @property
    def state(self) -> RegistryState:
        return self.tools.registry.state

    def _resolve(self, value: Any, where: str) -> Any:
        """``value`` with each placeholder replaced by its environment value."""
        if isinstance(value, dict):
            if set(value) == {"secret"} and isinstance(value["secret"], str):
                if value["secret"] not in self.secrets:
                    raise Invalid(f"{where}: set {value['secret']} in the environment (only "
                                  "CHATFLOW_SECRET_* names are read)", code=ApiCode.SECRET_MISSING)
                return self.secrets[value["secret"]]
            return {k: self._resolve(v, where) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolve(v, where) for v in value]
        return value

    def _same_secret(self, stored: Any, wanted: str) -> bool:
        try:
            return isinstance(stored, str) and self.box.decrypt(stored) == wanted
        except RegistryError:
            return False

    async def plan(self, files: dict[str, list[tuple[str, Any]]], publish: bool) -> list[Step]:
        await self.tools.registry.catch_up()
        steps: list[Step] = []
        for kind, planner in (("credentials", self._credential), ("servers", self._server),
                              ("tools", self._tool)):
            for name, data in files.get(kind, []):
                try:
                    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
                        raise Invalid(data if isinstance(data, str) else
                                      "expected a JSON object with an 'id'")
                    steps += planner(data, name)
                except RegistryError as exc:
                    steps.append(Step(kind.rstrip("s"), name, "refused", exc.message))
        if publish:
            steps += self._publishes([d for _n, d in files.get("tools", [])
                                      if isinstance(d, dict)])
        return steps

    # -- credentials and servers ---------------------------------------------------------

    def _credential(self, data: Record, where: str) -> list[Step]:
        cred_id = data["id"]
        resolved = self._resolve(data, where)
        fields = {k: v for k, v in resolved.items() if k != "apiKey" or v is not None}
        old = self.state.credentials.get(cred_id)
        if old is None:
            if cred_id in self.state.credentials:
                raise Invalid(f"{where}: the id is taken in another workspace")
            body = _model(CredentialCreate, fields, where)
            return [Step("credential", cred_id, "create",
                         run=lambda: self.credentials.create(body, scope=self.scope))]
        if self.state.credential_in(cred_id, self.scope.workspace) is None:
            raise Invalid(f"{where}: the id {cred_id!r} is taken in another workspace")
        changed = _differs(credential_file(old), data)
        if "apiKey" not in changed and data.get("apiKey") is not None \
                and not self._same_secret(old.get("apiKey"), fields["apiKey"]):
            changed.append("apiKey")
        if not changed:
            return [Step("credential", cred_id, "unchanged")]
        patch = _model(CredentialPatch, {k: fields[k] for k in changed
                                         if k in fields and k != "id"}, where)
        return [Step("credential", cred_id, "update", ", ".join(changed),
                     run=lambda: self.credentials.update(cred_id, patch, scope=self.scope))]

    def _server(self, data: Record, where: str) -> list[Step]:
        server_id = data["id"]
        resolved = self._resolve(data, where)
        top = {k: v for k, v in resolved.items() if k != "endpoints"}
        endpoints = {e["id"]: e for e in resolved.get("endpoints") or []
                     if isinstance(e, dict) and isinstance(e.get("id"), str)}
        old = self.state.servers.get(server_id)
        if old is None:
            body = _model(ServerCreate, top, where)
            made = [_model(EndpointCreate, e, f"{where} endpoint {i}")
                    for i, e in endpoints.items()]

            async def create() -> None:
                await self.servers.create(body, scope=self.scope)
                for endpoint in made:
                    await self.servers.add_endpoint(server_id, endpoint, scope=self.scope)
            return [Step("server", server_id, "create",
                         f"{len(made)} endpoint(s)" if made else "", run=create)]
        if self.state.server_in(server_id, self.scope.workspace) is None:
            raise Invalid(f"{where}: the id {server_id!r} is taken in another workspace")
        mine = server_file(old)
        changed = _differs({k: v for k, v in mine.items() if k != "endpoints"},
                           {k: v for k, v in data.items() if k != "endpoints"})
        if "headers" not in changed and not self._secrets_same(old.get("headers"),
                                                                top.get("headers")):
            changed.append("headers")
        steps = []
        if changed:
            patch = _model(ServerPatch, {k: top[k] for k in changed if k in top and k != "id"},
                           where)
            steps.append(Step("server", server_id, "update", ", ".join(changed),
                              run=lambda: self.servers.update(server_id, patch,
                                                              scope=self.scope)))
        else:
            steps.append(Step("server", server_id, "unchanged"))
        steps += self._endpoints(server_id, old, mine, data, endpoints, where)
        return steps

    def _secrets_same(self, stored: Any, wanted: Any) -> bool:
        kept = {h.get("name"): h.get("value") for h in stored or [] if h.get("secret")}
        return all(self._same_secret(kept.get(h.get("name")), str(h.get("value")))
                   for h in wanted or [] if isinstance(h, dict) and h.get("secret"))

    def _endpoints(self, server_id: str, old: Record, mine: Record, data: Record,
                   resolved: dict[str, Record], where: str) -> list[Step]:
        exported = {e["id"]: e for e in mine["endpoints"]}
        given = {e["id"]: e for e in data.get("endpoints") or [] if isinstance(e, dict)}
        steps = []
        for ep_id, endpoint in resolved.items():
            ident = f"{server_id}/{ep_id}"
            if ep_id not in exported:
                body = _model(EndpointCreate, endpoint, f"{where} endpoint {ep_id}")
                steps.append(Step("endpoint", ident, "create", run=partial(
                    self.servers.add_endpoint, server_id, body, scope=self.scope)))
                continue
            changed = _differs(exported[ep_id], given[ep_id])
            if "headers" not in changed and not self._secrets_same(
                    old["endpoints"][ep_id].get("headers"), endpoint.get("headers")):
                changed.append("headers")
            if not changed:
                continue  # unchanged endpoints go unmentioned: their server's line says it
            patch = _model(EndpointPatch, {k: endpoint[k] for k in changed
                                           if k in endpoint and k != "id"},
                           f"{where} endpoint {ep_id}")
            steps.append(Step("endpoint", ident, "update", ", ".join(changed), run=partial(
                self.servers.update_endpoint, server_id, ep_id, patch, scope=self.scope)))
        return steps

    # -- tools, their cases, publishing --------------------------------------------------

    def _tool(self, data: Record, where: str) -> list[Step]:
        tool_id = data["id"]
        definition = join_positions(data.get("definition"), data.get("positions") or {})
        wanted = {"name": data.get("name") or tool_id, "description": data.get("description"),
                  "definition": definition}
        cases = [_model(CaseIn, c, f"{where} tests[{i}]")
                 for i, c in enumerate(data.get("tests") or [])]
        old = self.state.tools.get(tool_id)
        steps = []
        if old is None:
            body = _model(ToolCreate, {"id": tool_id, "kind": data.get("kind", "custom"),
                                       "nativeName": data.get("nativeName"), **wanted}, where)
            steps.append(Step("tool", tool_id, "create",
                              run=lambda: self.tools.create(body, scope=self.scope)))
            existing: dict[str, Record] = {}
        else:
            if self.state.tool_in(tool_id, self.scope.workspace) is None:
                raise Invalid(f"{where}: the id {tool_id!r} is taken in another workspace")
            if old.get("deletedAt"):
                raise Invalid(f"{where}: tool {tool_id!r} is in the trash here; restore or "
                              "purge it first")
            changed = [k for k, v in wanted.items()
                       if old.get(k) != v and not (k == "definition" and v is None)]
            if changed:
                patch = _model(ToolPatch, {k: wanted[k] for k in changed}, where)
                steps.append(Step("tool", tool_id, "update", ", ".join(changed),
                                  run=lambda: self.tools.save(tool_id, patch, scope=self.scope)))
            else:
                steps.append(Step("tool", tool_id, "unchanged"))
            existing = self.state.cases.get(tool_id, {})
        for case in cases:
            case_id = case.id or ""
            ident = f"{tool_id}/{case_id}"
            if not case_id:
                raise Invalid(f"{where}: a test case without an id")
            if case_id not in existing:
                steps.append(Step("test", ident, "create", run=partial(
                    self.cases.create, tool_id, case, scope=self.scope)))
            elif case_file(existing[case_id]) != case.record(case_id):
                steps.append(Step("test", ident, "update", run=partial(
                    self.cases.replace, tool_id, case_id, case, scope=self.scope)))
            else:
                steps.append(Step("test", ident, "unchanged"))
        return steps

    def _publishes(self, tools: list[Record]) -> list[Step]:
        wanted = {t["id"]: t for t in tools if t.get("published") and isinstance(t.get("id"), str)}
        steps = []
        for tool_id in _callees_first(wanted):
            data = wanted[tool_id]
            pt = data.get("publishedToolId")
            draft = join_positions(data.get("definition"), data.get("positions") or {})
            target = (join_positions(data["publishedDefinition"],
                                     data.get("publishedPositions") or {})
                      if "publishedDefinition" in data else draft)
            old = self.state.tools.get(tool_id) or {}
            published = old.get("publishedTool") or {}
            name = data.get("name") or tool_id
            if published.get("definition") == target and published.get("name") == name:
                steps.append(Step("publish", tool_id, "unchanged"))
                continue
            steps.append(Step("publish", tool_id, "publish", f"as {pt}",
                              run=self._publisher(tool_id, pt, target, draft)))
        return steps

    def _publisher(self, tool_id: str, pt: str | None, target: Any, draft: Any) -> Apply:
        async def publish() -> None:
            if target != draft:  # published as it was, then the draft put back
                await self.tools.save(tool_id, ToolPatch(definition=target), scope=self.scope)
            await publish_gated(self.tools, self.runner, tool_id, note="chatflow import",
                                scope=self.scope, published_id=pt)
            if target != draft:
                await self.tools.save(tool_id, ToolPatch(definition=draft), scope=self.scope)
        return publish


def _callees_first(tools: dict[str, Record]) -> list[str]:
    """Tool ids ordered so each comes after the tools of ``tools`` it calls."""
    by_pt = {t.get("publishedToolId"): i for i, t in tools.items()}
    order: list[str] = []
    seen: set[str] = set()

    def visit(tool_id: str, path: set[str]) -> None:
        if tool_id in seen or tool_id in path:
            return
        data = tools[tool_id]
        definition = data.get("publishedDefinition") or data.get("definition")
        for _block, callee_pt in call_targets(definition):
            callee = by_pt.get(callee_pt)
            if callee is not None:
                visit(callee, path | {tool_id})
        seen.add(tool_id)
        order.append(tool_id)

    for tool_id in sorted(tools):
        visit(tool_id, set())
    return order


async def apply(steps: list[Step]) -> None:
    if any(s.action == "refused" for s in steps):
        raise Invalid("the plan has refusals: nothing was applied")
    for step in steps:
        if step.run is not None:
            await step.run()


def needed_secrets(files: dict[str, list[tuple[str, Any]]]) -> set[str]:
    return set().union(*(placeholders(d) for items in files.values() for _n, d in items))

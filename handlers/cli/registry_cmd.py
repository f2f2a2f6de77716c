"""``chatflow registry rebuild``, and what the registry commands share (tools, servers)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from chatflow.runtime.errors import ConfigurationError
from chatflow.runtime.outbound import Outbound
from chatflow.runtime.registry import DEFAULT_WORKSPACE

from ..operations.logging import configure_logging
from ..registry import Invalid, Registry
from ..registry.crypto import SecretBox
from ..registry.inline import InlineRunner
from ..registry.scope import Scope
from ..registry.servers import CredentialOps, ServerOps
from ..registry.testcases import CaseLimits, CaseOps, CaseRunner
from ..registry.tools import ToolOps
from ..registry.versions import VersionOps
from ..settings import Settings
from .common import add_redis_flag, client_for, settings_from

M = TypeVar("M", bound=BaseModel)


@dataclass
class Ops:
    registry: Registry
    tools: ToolOps
    servers: ServerOps
    credentials: CredentialOps
    settings: Settings
    http: Outbound
    _inline: InlineRunner | None = None

    @property
    def versions(self) -> VersionOps:
        return VersionOps(self.tools)

    def cases(self) -> CaseOps:
        return CaseOps(self.registry, CaseLimits.of(self.settings))

    def case_runner(self) -> CaseRunner:
        """Saved test cases run in this process (made on first use: it holds a sandbox)."""
        if self._inline is None:
            self._inline = InlineRunner(self.settings, self.registry.client,
                                        self.registry.keys, self.http)
        return CaseRunner(self.registry, self._inline)

    async def aclose(self) -> None:
        if self._inline is not None:
            await self._inline.aclose()


def show_json(result: Any) -> int:
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


def run_ops(args: argparse.Namespace, action: Callable[[Ops], Awaitable[Any]],
            show: Callable[[Any], int] = show_json) -> int:
    """Run one registry operation against REDIS_URL and print its result (JSON unless
    ``show`` says otherwise; stdout, logs go to stderr); ``show`` gives the exit status."""
    configure_logging()

    async def go() -> Any:
        settings = settings_from(args)
        client, keys = client_for(settings)
        http = settings.outbound()
        ops: Ops | None = None
        try:
            registry = Registry(client, keys, SecretBox.from_settings(settings))
            ops = Ops(registry, ToolOps(registry), ServerOps(registry, http, settings.limits()),
                      CredentialOps(registry), settings, http)
            return await action(ops)
        finally:
            if ops is not None:
                await ops.aclose()
            await http.aclose()
            await client.aclose()

    return show(asyncio.run(go()))


def scope_of(args: argparse.Namespace) -> Scope:
    """The shell's scope in ``--workspace`` (default ``default``)."""
    return Scope(getattr(args, "workspace", None) or DEFAULT_WORKSPACE)


def add_workspace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=DEFAULT_WORKSPACE,
                        help="the workspace the command acts in (default: default)")


def model(cls: type[M], data: dict[str, Any]) -> M:
    """A request model from CLI flags; bad values become a clear error."""
    try:
        return cls.model_validate({k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise Invalid("invalid arguments", problems=problems) from exc


def read_json(path: str | None) -> Any:
    if path is None:
        return None
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return json.loads(text)
    except OSError as exc:
        raise ConfigurationError(f"{path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}: not JSON ({exc})") from exc


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("registry", help="the tool registry's log and projections")
    inner = p.add_subparsers(dest="registry_command", required=True)
    rebuild = inner.add_parser("rebuild", help="replay the registry log into fresh projections "
                                               "(tool caches, server caches, lists)")
    add_redis_flag(rebuild)
    rebuild.set_defaults(handler=cmd_rebuild)


def cmd_rebuild(args: argparse.Namespace) -> int:
    async def rebuild(ops: Ops) -> dict[str, Any]:
        events = await ops.registry.rebuild()
        state = ops.registry.state
        return {"events": events, "tools": len(state.tools),
                "published": sum(1 for t in state.tools.values()
                                 if t.get("publishedTool") and not t.get("deletedAt")),
                "trashed": sum(1 for t in state.tools.values() if t.get("deletedAt")),
                "servers": len(state.servers), "credentials": len(state.credentials)}

    return run_ops(args, rebuild)

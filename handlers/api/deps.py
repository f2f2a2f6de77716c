"""What every route needs: the registry's operations, built once per app."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from chatflow.runtime.outbound import Outbound

from ..keys import Keys
from ..redaction import SecretIndex
from ..redis_client import Client
from ..registry import Registry
from ..registry.crypto import SecretBox
from ..registry.inline import InlineRunner
from ..registry.servers import CredentialOps, ServerOps
from ..registry.testcases import CaseLimits, CaseOps, CaseRunner
from ..registry.tools import ToolOps
from ..registry.versions import VersionOps
from ..settings import Settings
from .held import HeldConnections


@dataclass
class Services:
    settings: Settings
    client: Client
    keys: Keys
    http: Outbound
    registry: Registry
    tools: ToolOps
    servers: ServerOps
    credentials: CredentialOps
    inline: InlineRunner
    held: HeldConnections
    secrets: SecretIndex
    versions: VersionOps
    cases: CaseOps
    case_runner: CaseRunner
    history: Any = None  # the run history's AsyncEngine (CHATFLOW_HISTORY_URL), or None

    @classmethod
    def build(cls, settings: Settings, client: Client) -> Services:
        keys = Keys(settings.prefix, settings.partitions)
        http = settings.outbound()
        registry = Registry(client, keys, SecretBox.from_settings(settings))
        limits = settings.limits()
        history = None
        if settings.history_url:
            from ..history.db import engine_for

            history = engine_for(settings.history_url)
        tools = ToolOps(registry)
        inline = InlineRunner(settings, client, keys, http)
        secrets = SecretIndex(client, keys)
        return cls(settings, client, keys, http, registry, tools,
                   ServerOps(registry, http, limits), CredentialOps(registry), inline,
                   HeldConnections(settings, keys, client), secrets,
                   VersionOps(tools), CaseOps(registry, CaseLimits.of(settings)),
                   CaseRunner(registry, inline, history, secrets), history)

    async def gate_held(self, actor: str, workspace: str, tool_id: str
                        ) -> AbstractAsyncContextManager[Any]:
        """A publish or a rollback runs the tool's saved cases first, which makes it a long
        request: held like a test run. A tool without cases holds nothing."""
        await self.registry.catch_up()
        if self.registry.state.cases.get(tool_id):
            return self.held.hold(actor, workspace)
        return nullcontext()

    async def close(self) -> None:
        await self.inline.aclose()
        await self.held.aclose()
        await self.http.aclose()
        if self.history is not None:
            await self.history.dispose()


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found

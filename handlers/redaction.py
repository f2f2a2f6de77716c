"""Masking at the handlers' edge: the structlog processor, the definitions the history keeps,
and the workspace's stored secret values that every recorder masks.

The policy itself is ``chatflow.runtime.masking`` (one module for names, text, URLs and
known values); this adds what needs I/O: :class:`SecretIndex` reads the secret values of a
workspace from ``{prefix}secrets:{workspace}``, a set the registry projects beside the
server and credential caches (``handlers.registry.projector``), and keeps them a few seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import MutableMapping
from typing import Any

from chatflow.runtime.masking import MASK, is_secret_name, mask, mask_text, mask_url

from .keys import Keys
from .redis_client import Client

__all__ = ["MASK", "SecretIndex", "mask", "mask_text", "mask_url", "redact",
           "redact_definition", "redact_secrets"]

# A secret-named field whose whole value is a reference ("Bearer {{token}}", "{{apiKey}}"):
# it says where the secret comes from at run time and holds none itself.
TEMPLATE_ONLY = re.compile(r"\s*(?:[A-Za-z][A-Za-z0-9-]*\s+)?\{\{[^{}]+\}\}\s*")


def redact(value: Any) -> Any:
    """``value`` masked by the policy's names, text and depth rules (no known values)."""
    return mask(value)


def _template_only(_name: str, value: Any) -> bool:
    return isinstance(value, str) and TEMPLATE_ONLY.fullmatch(value) is not None


def redact_definition(value: Any, secrets: tuple[str, ...] = ()) -> Any:
    """A tool definition as a run used it, masked, keeping a secret-named value that is only
    a ``{{variable}}`` reference: a fork of the run can then use the definition as recorded,
    with the secret supplied again as a variable."""
    return mask(value, secrets, keep=_template_only)


def redact_secrets(_logger: Any, _method: str,
                   event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: every field masked by the policy, secret-named ones whole."""
    for key in list(event):
        event[key] = MASK if is_secret_name(key) else mask(event[key])
    return event


class SecretIndex:
    """The stored secret values of each workspace (server secret headers, LLM API keys),
    read from the registry's projection and kept ``ttl_s`` seconds per workspace."""

    def __init__(self, client: Client, keys: Keys, ttl_s: float = 5.0) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = ttl_s
        self._known: dict[str, tuple[float, tuple[str, ...]]] = {}

    async def of(self, workspace: str) -> tuple[str, ...]:
        now = time.monotonic()
        cached = self._known.get(workspace)
        if cached is not None and now - cached[0] < self.ttl_s:
            return cached[1]
        raw = await self.client.smembers(self.keys.workspace_secrets(workspace))
        values = tuple(sorted((v.decode() if isinstance(v, bytes) else str(v) for v in raw),
                              key=len, reverse=True))  # longest first: a secret inside another
        self._known[workspace] = (now, values)
        return values

    async def masked(self, workspace: str, value: Any) -> Any:
        return mask(value, await self.of(workspace))

    async def masked_text(self, workspace: str, text: str) -> str:
        return mask_text(text, await self.of(workspace))

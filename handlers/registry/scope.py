"""Who acts on the registry: the workspace an operation is confined to, and the actor the
log records for it (an API key's id, or ``shell`` for the trusted command line), with the
actor's name (the key's name) where an event keeps it, as a published version does."""

from __future__ import annotations

from dataclasses import dataclass

from chatflow.runtime.registry import DEFAULT_WORKSPACE


@dataclass(frozen=True, slots=True)
class Scope:
    workspace: str = DEFAULT_WORKSPACE
    actor: str = "shell"
    name: str = "shell"


SHELL = Scope()

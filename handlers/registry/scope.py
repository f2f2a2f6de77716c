"""Who acts on the registry: the workspace an operation is confined to, and the actor the
log records for it (an API key's id, or ``shell`` for the trusted command line), with the
actor's name (the key's name) where an event keeps it, as a published version does.

A :class:`Grant` is what the one authorization function (``handlers.api.authorization``)
hands a route that accepts a definition or starts an execution: the workspace it fixed.
Whatever runs under a grant runs in that workspace (a test run, a fork and its children),
and no code re-derives it from the registry later."""

from __future__ import annotations

from dataclasses import dataclass

from chatflow.runtime.registry import DEFAULT_WORKSPACE


@dataclass(frozen=True, slots=True)
class Scope:
    workspace: str = DEFAULT_WORKSPACE
    actor: str = "shell"
    name: str = "shell"


SHELL = Scope()


@dataclass(frozen=True, slots=True)
class Grant:
    """An authorization decision: ``actor`` (a key id, ``shell``, ``internal``) may start
    executions and check definitions in ``workspace``."""

    workspace: str
    actor: str
    name: str = "shell"  # the key's name, kept where an event records it (a version)

    @property
    def scope(self) -> Scope:
        return Scope(self.workspace, self.actor, self.name)


def shell_grant(workspace: str) -> Grant:
    """The trusted command line (``chatflow fork`` ...): it acts in the workspace of what it
    acts on, as the operator of the whole deployment."""
    return Grant(workspace, "shell")

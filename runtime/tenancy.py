"""Where a block's references resolve: inside the workspace its execution tree started in.

A workspace is fixed when a tree starts (``RootInfo.workspace``: the root tool's, or the
caller's key's for a test run or a fork) and never derived again. Every record a block looks
up (a published tool for callTool, an integration server for callEndpoint, an LLM credential
for callAI) carries the workspace that owns it, written by the registry's projections; a
record of another workspace resolves exactly as a missing one, with the same error code and
message, so a reference cannot even tell that it exists. The registry's checks (a publish,
and the API's early refusal of a test run or a fork: ``RegistryState.tool_in``,
``server_in``, ``credential_in``) ask :func:`resolves` too, so the rule is written once.

Records the runtime makes for itself are never a target: a fork's published record
(``forCommand`` set) runs only for the one command it was made for, and no callTool can
name it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

DEFAULT_WORKSPACE = "default"


def workspace_of(record: Mapping[str, Any] | None) -> str:
    """The workspace a record (or a registry event) belongs to; a record written without
    one (by hand, or before workspaces existed) belongs to ``default``."""
    found = (record or {}).get("workspace")
    return found if isinstance(found, str) and found else DEFAULT_WORKSPACE


def resolves(record_workspace: str | None, workspace: str) -> bool:
    """Whether an object owned by ``record_workspace`` may be used by an execution (or a
    definition being checked) in ``workspace``."""
    return (record_workspace or DEFAULT_WORKSPACE) == workspace


class _Owned(msgspec.Struct):
    workspace: str = DEFAULT_WORKSPACE


_owned = msgspec.json.Decoder(_Owned)


def owner_of_json(raw: bytes | str) -> str | None:
    """The ``workspace`` of a cached record as stored (JSON), read without decoding the rest;
    None when the text is not a JSON object (its reader reports it as invalid)."""
    try:
        found = _owned.decode(raw).workspace
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return found or DEFAULT_WORKSPACE


def usable(raw: bytes | str | None, workspace: str) -> bytes | str | None:
    """``raw`` (a cached record) when an execution in ``workspace`` may use it, else None:
    another workspace's record is handed to the reader exactly as a missing one."""
    if raw is None:
        return None
    owner = owner_of_json(raw)
    return raw if owner is None or resolves(owner, workspace) else None

"""The record the runtime reads under ``tool:{publishedToolId}``, its bytes and its hash.

The hash is the sha1 of the exact bytes the projector writes, which is what a worker hashes
when it loads the tool (``runtime.definitions.DefinitionCache``): a published version's
``hash`` is therefore the ``definitionHash`` of every run that used it in the run history.
No import of the state here, so the fold can hash a version as it folds it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

Record = dict[str, Any]


def record_of(published_id: str, tool_id: str, name: str, definition: Any,
              workspace: str) -> Record:
    """``{"id", "toolId", "name", "definition", "workspace"}``, in this order (SPEC)."""
    return {"id": published_id, "toolId": tool_id, "name": name, "definition": definition,
            "workspace": workspace}


def record_bytes(record: Record) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def record_hash(record: Record) -> str:
    return hashlib.sha1(record_bytes(record), usedforsecurity=False).hexdigest()

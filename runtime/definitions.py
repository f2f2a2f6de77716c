"""Parsing published tools, cached by content hash so each definition is validated once."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from pydantic import ValidationError

from chatflow.schemas.definition import PublishedTool, format_validation_error

from . import errors
from .errors import ToolFailure

# Tool texts up to this size have their digest remembered (``DefinitionCache._digest``):
# the memo holds at most ``size`` of them, so at most 64 MB with the default size.
_REMEMBERED_MAX_BYTES = 64 * 1024


class DefinitionCache:
    """An LRU of parsed published tools keyed by the sha1 of their JSON text."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._items: OrderedDict[str, PublishedTool] = OrderedDict()
        # The digest of each small tool text seen: the same bytes come back on every command
        # and every callTool, and a dict lookup on them costs less than hashing them again.
        self._digests: OrderedDict[bytes, str] = OrderedDict()

    def get(self, digest: str) -> PublishedTool | None:
        item = self._items.get(digest)
        if item is not None:
            self._items.move_to_end(digest)
        return item

    def put(self, digest: str, tool: PublishedTool) -> None:
        self._items[digest] = tool
        self._items.move_to_end(digest)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def parse(self, pt: str, raw: bytes | None) -> tuple[PublishedTool, str, bytes] | ToolFailure:
        """The published tool stored under ``tool:{pt}``, or its load failure
        (``tool_not_found``, ``tool_definition_invalid``: the contract in docs/spec.md)."""
        if raw is None:
            return errors.tool_not_found(pt)
        # ``_digest`` and ``get`` inline for a text seen before: every command and every
        # callTool parses its tool again.
        digest = self._digests.get(raw) or self._digest(raw)
        cached = self._items.get(digest)
        if cached is not None:
            self._items.move_to_end(digest)
            return cached, digest, raw
        try:
            tool = PublishedTool.model_validate_json(raw)
        except ValidationError as exc:
            problems = format_validation_error(exc)
            detail = "; ".join(problems[:5]) + (f"; +{len(problems) - 5} more" if len(problems) > 5 else "")
            return errors.tool_definition_invalid(pt, detail)
        self.put(digest, tool)
        return tool, digest, raw

    def _digest(self, raw: bytes) -> str:
        digest = self._digests.get(raw)
        if digest is not None:
            return digest
        digest = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        if len(raw) <= _REMEMBERED_MAX_BYTES:
            self._digests[raw] = digest
            while len(self._digests) > self._size:
                self._digests.popitem(last=False)
        return digest

    def by_hash(self, digest: str, raw: bytes | None) -> PublishedTool | None:
        cached = self.get(digest)
        if cached is not None or raw is None:
            return cached
        tool = PublishedTool.model_validate_json(raw)
        self.put(digest, tool)
        return tool

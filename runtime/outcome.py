"""What a block executor hands back to the state machine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chatflow.schemas.definition import PublishedTool
from chatflow.schemas.edge import RetryPolicy

from .errors import ToolFailure
from .state import Emit


@dataclass(slots=True)
class BlockOutcome:
    """A finished block: variables it wrote, or the failure it met, plus debug detail."""

    writes: dict[str, Any] = field(default_factory=dict)
    error: ToolFailure | None = None
    debug: dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0
    # Messages for public streams that this block produced (callAI's llm-usage events);
    # they commit atomically with the step like every other emit.
    emits: list[Emit] = field(default_factory=list)
    # The retry policy in force for this attempt (the block's, or its server's default):
    # set by whoever ran the block; the machine decides with it (runtime/retry.py). None:
    # the outcome is final (no policy, or a recorded outcome replayed).
    retry: RetryPolicy | None = None
    retry_after: str | None = None  # the response's Retry-After header, when it failed


@dataclass(slots=True)
class SpawnChild:
    """A callTool block asks for a child execution of ``published``."""

    published: PublishedTool
    def_hash: str
    def_bytes: bytes
    inputs: dict[str, Any]

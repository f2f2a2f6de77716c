"""Public value types of the script sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..errors import ErrorCode

# The codes a script's outcome carries: rows of the error table (the prelude's JavaScript
# spells the same strings; tests/test_error_codes.py checks them).
SCRIPT_ERROR: Final = str(ErrorCode.SCRIPT_ERROR)
SCRIPT_TIMEOUT: Final = str(ErrorCode.SCRIPT_TIMEOUT)
SCRIPT_MEMORY: Final = str(ErrorCode.SCRIPT_MEMORY)
SCRIPT_SYNTAX: Final = str(ErrorCode.SCRIPT_SYNTAX)
SCRIPT_RESULT: Final = str(ErrorCode.SCRIPT_RESULT)


@dataclass(frozen=True)
class ScriptLimits:
    """Limits applied to every script run by a sandbox."""

    timeout_ms: int = 1000
    max_memory_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class ScriptJob:
    """One script execution: a function body plus its named inputs."""

    source: str
    inputs: Mapping[str, Any]
    timeout_ms: int | None = None
    owner: str = ""  # who the script runs for (a tool id): lanes are shared fairly by owner


@dataclass(frozen=True)
class ScriptOutcome:
    """Result of one job: ``value`` when ``ok``, else ``error`` and a stable ``code``."""

    ok: bool
    value: Any = None
    error: str | None = None
    code: str | None = None

    @classmethod
    def success(cls, value: Any) -> ScriptOutcome:
        return cls(ok=True, value=value)

    @classmethod
    def failure(cls, code: str, error: str) -> ScriptOutcome:
        return cls(ok=False, error=error, code=code)


def timeout_outcome(timeout_ms: int) -> ScriptOutcome:
    return ScriptOutcome.failure(SCRIPT_TIMEOUT, f"script timeout (>{timeout_ms}ms)")


def memory_outcome(max_memory_bytes: int) -> ScriptOutcome:
    mib = max_memory_bytes / (1024 * 1024)
    size = f"{mib:g} MiB"
    return ScriptOutcome.failure(SCRIPT_MEMORY, f"script memory limit exceeded ({size})")

"""Parsing an OpenAPI spec off the event loop, with a time bound and a cap on parallel work.

The parse itself is bounded (``runtime/registry/openapi_load.py``); running it in a thread
keeps every other request of the API answering while it runs, and the deadline the
composer checks ends the thread soon after the caller gave up on it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from chatflow.runtime.registry.openapi import OpenApiError, SpecLimits, parse_openapi

from .errors import ApiCode, Invalid, RegistryError

# Imports parsed at once per process: more wait is not worth it, they are refused.
_PARALLEL = threading.BoundedSemaphore(2)


class ImportBusy(RegistryError):
    """Raised when the process is already parsing as many specs as it allows (429)."""

    status = 429
    code = ApiCode.IMPORT_BUSY


async def parse_spec(text: str, limits: SpecLimits | None = None) -> list[dict[str, Any]]:
    """Endpoint drafts of ``text``, parsed in a worker thread within ``limits.timeout_s``."""
    limits = limits or SpecLimits()
    if not _PARALLEL.acquire(blocking=False):
        raise ImportBusy("other OpenAPI imports are being parsed; try again shortly")
    deadline = time.monotonic() + limits.timeout_s

    def work() -> list[dict[str, Any]]:
        try:
            return parse_openapi(text, limits, deadline)
        finally:
            _PARALLEL.release()

    try:
        async with asyncio.timeout(limits.timeout_s):
            return await asyncio.to_thread(work)
    except TimeoutError as exc:
        raise Invalid(f"the OpenAPI spec cannot be imported: parsing took longer than "
                      f"{limits.timeout_s:g}s", code=ApiCode.INVALID_OPENAPI) from exc
    except OpenApiError as exc:
        raise Invalid(f"the OpenAPI spec cannot be imported: {exc}",
                      code=ApiCode.INVALID_OPENAPI) from exc

"""Keep secrets out of logs: a structlog processor that masks them."""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

SECRET_KEYS = re.compile(r"(authorization|api[-_]?key|token|secret|password|cookie|x-internal-secret)",
                         re.IGNORECASE)
SECRET_VALUES = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+|"
                           r"((?:api[-_]?key|token|secret|password|key)=)[^&\s\"']+")
MASK = "***"


def _mask_text(text: str) -> str:
    return SECRET_VALUES.sub(lambda m: (m.group(1) or m.group(2)) + MASK, text)


def redact(value: Any, depth: int = 0) -> Any:
    if depth > 6:
        return value
    if isinstance(value, str):
        return _mask_text(value)
    if isinstance(value, dict):
        return {k: MASK if isinstance(k, str) and SECRET_KEYS.search(k) else redact(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, depth + 1) for v in value]
    return value


# A secret-named field whose whole value is a reference ("Bearer {{token}}", "{{apiKey}}"):
# it says where the secret comes from at run time and holds none itself.
TEMPLATE_ONLY = re.compile(r"\s*(?:[A-Za-z][A-Za-z0-9-]*\s+)?\{\{[^{}]+\}\}\s*")


def redact_definition(value: Any, depth: int = -26) -> Any:
    """``redact`` for a tool definition as a run used it (32 levels of nesting), keeping a
    secret-named value that is only a ``{{variable}}`` reference: a fork of the run can then
    use the definition as recorded, with the secret supplied again as a variable."""
    if depth > 6:
        return value
    if isinstance(value, dict):
        return {k: (v if isinstance(v, str) and TEMPLATE_ONLY.fullmatch(v) else MASK)
                if isinstance(k, str) and SECRET_KEYS.search(k)
                else redact_definition(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_definition(v, depth + 1) for v in value]
    return redact(value, depth)


def redact_secrets(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if SECRET_KEYS.search(key):
            event[key] = MASK
        else:
            event[key] = redact(event[key])
    return event

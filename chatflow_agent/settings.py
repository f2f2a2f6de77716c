"""The SDK's settings: the one module of ``chatflow_agent`` that reads the environment.

One reader per side of the distribution: the service (``chatflow.runtime``,
``chatflow.handlers``) reads its environment in ``chatflow.handlers.settings`` only, and the
SDK, which runs inside users' applications without the service, reads it here only (it never
imports ``chatflow.handlers``). tests/test_environment.py fails on any other module that
touches ``os.environ``.

Variables: each provider's API key and base URL (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``...,
named by the provider modules) and ``CHATFLOW_AGENT_TOOL_THREADS``.
"""

from __future__ import annotations

import os

from .errors import ProviderConfigError, SettingsError

TOOL_THREADS = "CHATFLOW_AGENT_TOOL_THREADS"


def _text(variable: str) -> str:
    return os.environ.get(variable, "").strip()


def api_key(provider: str, *variables: str) -> str:
    """The first of ``variables`` that is set; the error names them, never a value."""
    for variable in variables:
        value = _text(variable)
        if value:
            return value
    names = " or ".join(variables)
    raise ProviderConfigError(f"{provider} needs an API key: set the {names} environment variable")


def base_url(variable: str, default: str) -> str:
    """``variable``'s URL, else ``default``."""
    return _text(variable) or default


def tool_threads(default: int) -> int:
    """How many sync tools may run at once (``CHATFLOW_AGENT_TOOL_THREADS``), else ``default``."""
    text = _text(TOOL_THREADS)
    if not text:
        return default
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise SettingsError(f"{TOOL_THREADS} must be a whole number of at least 1, "
                            f"not {text!r}")
    return count

"""API keys and base URLs from the environment."""

from __future__ import annotations

import os

from ..errors import ProviderConfigError


def api_key(provider: str, *variables: str) -> str:
    """The first of ``variables`` that is set; the error names them, never a value."""
    for variable in variables:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    names = " or ".join(variables)
    raise ProviderConfigError(f"{provider} needs an API key: set the {names} environment variable")


def base_url(variable: str, default: str) -> str:
    return os.environ.get(variable, "").strip() or default

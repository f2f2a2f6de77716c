"""The SDK's error tree: catch ``ChatflowAgentError`` to catch them all.

One root, each kind under it, each a "Raised when..." line (the runtime's own root is
``chatflow.runtime.errors.ChatflowError``; no class name is used on both sides):

* ``SettingsError``: an environment variable the SDK reads.
* ``ToolError``: defining a tool (``ToolSchemaError``) or calling it (``ToolExecutionError``,
  ``ToolArgumentsError``).
* ``ProviderError``: a model provider (``ProviderConfigError``, ``ProviderHTTPError``,
  ``ProviderResponseError``).
* ``OutputValidationError``, ``MaxTurnsExceeded``, ``UsageLimitExceeded``: an agent's run.
* ``RuntimeUnavailable``, ``ResultTimeout``: the chatflow runtime, reached through Redis
  (``runtime_client``); ``RuntimeToolsError`` (``runtime_tools``), ``MCPError`` (``mcp``) and
  ``TestModelError`` (``testing``) live beside the code that raises them.
"""

from __future__ import annotations

from typing import Any

from chatflow.schemas.renamed import renamed


class ChatflowAgentError(Exception):
    """Raised when anything in the chatflow_agent SDK fails; the root of its errors."""


class SettingsError(ChatflowAgentError):
    """Raised when an environment variable the SDK reads holds a value it cannot use."""


class ToolError(ChatflowAgentError):
    """Raised when a tool cannot be defined or a call to it fails."""


class ToolSchemaError(ToolError, TypeError):
    """Raised when a tool's signature cannot be mapped to a schema every provider accepts."""

    def __init__(self, message: str, *, function: str = "", path: str = "") -> None:
        super().__init__(message)
        self.function = function
        self.path = path


class ToolExecutionError(ToolError):
    """Raised when a tool call fails: its arguments were rejected or the function raised."""

    def __init__(self, message: str, *, tool_name: str = "") -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolArgumentsError(ToolExecutionError, ValueError):
    """Raised when a tool call's arguments do not fit the tool's signature; it never ran."""


class ProviderError(ChatflowAgentError):
    """Raised when a model provider cannot be reached or answers with an error."""


class ProviderConfigError(ProviderError):
    """Raised when a provider is missing configuration, such as its API key variable."""


class ProviderHTTPError(ProviderError):
    """Raised when a provider answers with an HTTP error status."""

    def __init__(self, message: str, *, provider: str, status_code: int) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ProviderResponseError(ProviderError):
    """Raised when a provider's answer does not follow its documented wire format."""


class OutputValidationError(ChatflowAgentError):
    """Raised when a model's final reply does not fit the agent's output_type, even when retried."""


class MaxTurnsExceeded(ChatflowAgentError):
    """Raised when a run needs more model turns than the agent's ``max_turns`` allows."""


class UsageLimitExceeded(ChatflowAgentError):
    """Raised when a run would go over its UsageLimits; ``usage`` is what it used so far."""

    def __init__(self, message: str, *, usage: Any) -> None:
        super().__init__(message)
        self.usage = usage


class RuntimeUnavailable(ChatflowAgentError):
    """Raised when the runtime's Redis URL is not a Redis URL."""


class ResultTimeout(ChatflowAgentError, TimeoutError):
    """Raised when a command's result does not arrive on its reply stream in time."""


# Names kept for one release: importing one warns and gives the new class.
__getattr__ = renamed(__name__, {"ConfigurationError": "SettingsError"}, globals())


__all__ = [
    "ChatflowAgentError",
    "MaxTurnsExceeded",
    "OutputValidationError",
    "ProviderConfigError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderResponseError",
    "ResultTimeout",
    "RuntimeUnavailable",
    "SettingsError",
    "ToolArgumentsError",
    "ToolError",
    "ToolExecutionError",
    "ToolSchemaError",
    "UsageLimitExceeded",
]

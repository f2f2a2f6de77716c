"""chatflow_agent: typed tools for AI agents, and the agents and runner that call them."""

from .core.agent import Agent
from .core.context import RunContext
from .core.hooks import RunHooks
from .core.messages import ToolCall, ToolResult
from .core.runner import Runner, RunResult
from .core.usage import Usage, UsageLimits
from .errors import (
    ChatflowAgentError,
    MaxTurnsExceeded,
    ToolExecutionError,
    ToolSchemaError,
    UsageLimitExceeded,
)
from .tools import Tool, tool

__version__ = "0.4.0"

__all__ = [
    "Agent",
    "ChatflowAgentError",
    "MaxTurnsExceeded",
    "RunContext",
    "RunHooks",
    "RunResult",
    "Runner",
    "Tool",
    "ToolCall",
    "ToolExecutionError",
    "ToolResult",
    "ToolSchemaError",
    "Usage",
    "UsageLimitExceeded",
    "UsageLimits",
    "__version__",
    "tool",
]

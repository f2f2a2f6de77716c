"""Tools: the ``@tool`` decorator, argument checking and where tool code runs."""

from .execution import configure_tool_threads
from .tool import Tool, tool

__all__ = ["Tool", "configure_tool_threads", "tool"]

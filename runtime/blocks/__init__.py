"""Block executors: the edge where a block meets the outside world.

Each executor takes the execution state and its block and returns a
:class:`~runtime.outcome.BlockOutcome` (or, for callTool, a request to spawn
a child). They never raise for a block's own failure: that is an outcome, so
``onError`` can decide. Only the transport they are given does I/O.
"""

from .runner import BlockRunner, ToolSource

__all__ = ["BlockRunner", "ToolSource"]

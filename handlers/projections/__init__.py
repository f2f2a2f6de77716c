"""Read models built from the public streams (``stream:tool-executions``, docs/spec.md).

``execlog`` consumes ``stream:tool-executions`` in the group ``core-tool-executions``
into a per-tool execution log and hourly counters; ``metrics.tool_metrics`` reads
the rolling 7-day ``runs7d``/``avgMs``/``successRate`` from them.
"""

from .execlog import ExecutionLog, rebuild, snapshot, trim_source
from .metrics import tool_metrics

__all__ = ["ExecutionLog", "rebuild", "snapshot", "tool_metrics", "trim_source"]

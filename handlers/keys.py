"""Every Redis key and stream name: the public ones (SPEC, shared with producers and the SDK)
come from chatflow.schemas.keys; the internal ones are here. Internal keys live
in partitions: every key of one partition carries the hash tag ``{cf:N}``, so
one Lua script can commit a step's state, its next step and its outbox
messages atomically, on a single node or a Redis Cluster alike. A callTool
tree lives entirely in its root's partition.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from chatflow.schemas.keys import (
    COMMANDS_GROUP,
    NATIVE_GROUP,
    PROJECTION_GROUP,
    RELAY_GROUP,
    STEPS_GROUP,
    PublicKeys,
)

# The run history's consumer group on stream:tool-executions (handlers/history/runner.py),
# named here so a worker without a history need not import SQLAlchemy to know it.
HISTORY_GROUP = "chatflow-history"
# The tracing projection's group on stream:tool-executions (handlers/projections/tracing.py):
# its own position, like the history's, so a collector that is down holds back nothing else.
TRACING_GROUP = "chatflow-tracing"

# A fork's published record is ``tool:fork:<publishedToolId>:<id>`` (handlers/history/fork.py):
# runs of it count, in the metrics and the history, under the tool it forked.
FORK_PREFIX = "fork:"


def origin_of(published_tool_id: str) -> str:
    """The publishedToolId a fork's tool was made from (itself for any other tool)."""
    if published_tool_id.startswith(FORK_PREFIX):
        return published_tool_id[len(FORK_PREFIX):].rsplit(":", 1)[0]
    return published_tool_id


@dataclass(frozen=True, slots=True)
class Keys(PublicKeys):
    partitions: int = 4

    def workspace_secrets(self, workspace: str) -> str:
        """Set of the workspace's stored secret values, decrypted (server secret headers, LLM
        API keys), projected by the registry beside its caches: what the history, debug
        events and endpoint tests mask wherever it appears (handlers/redaction.py)."""
        return f"{self.prefix}secrets:{workspace}"

    @property
    def workspace_secrets_index(self) -> str:
        """Set of the workspaces that have a ``workspace_secrets`` set."""
        return f"{self.prefix}secrets-index"

    # -- access control (docs/security.md) ----------------------------------------
    def held_by_key(self, key_id: str) -> str:
        """Zset of the long requests one API key holds (lease id -> expiry ms;
        handlers/api/held.py). One hash tag for all, so one script counts both caps."""
        return f"{self.prefix}{{held}}:key:{key_id}"

    def held_by_workspace(self, workspace: str) -> str:
        return f"{self.prefix}{{held}}:ws:{workspace}"

    def api_key(self, key_id: str) -> str:
        """Hash of one API key: its SHA-256, workspace, role, name, times; never the token."""
        return f"{self.prefix}apikey:{key_id}"

    @property
    def api_keys(self) -> str:
        """Set of every API key id (revoked ones too, for the listing)."""
        return f"{self.prefix}apikeys"

    @property
    def workspaces(self) -> str:
        """Set of workspace ids (``default`` always exists, listed or not)."""
        return f"{self.prefix}workspaces"

    @staticmethod
    def sent_marker(stream: str, message_id: str) -> str:
        """Dedup marker in the same slot as ``stream`` (hash tag = the stream's full name)."""
        return f"{{{stream}}}:sent:{message_id}"

    def debug_owners(self, contact_id: str) -> str:
        """Set of the workspaces that switched a contact's debug flag on through the API.
        The flag itself stays ``debug:contact:{id}`` (SPEC: its existence turns debug on);
        another prefix than the flag's, so no contact id can name this key as its flag."""
        return f"{self.prefix}debug:owners:{contact_id}"

    @property
    def trees_ended(self) -> str:
        """Hash reason -> trees ended from outside the machine (handlers/dataplane/trees.py)."""
        return f"{self.prefix}counters:trees-ended"

    # -- partitions ----------------------------------------------------------
    def partition_of(self, command_id: str) -> int:
        return zlib.crc32(command_id.encode()) % self.partitions

    def _tag(self, n: int) -> str:
        return f"{self.prefix}{{cf:{n}}}"

    def steps(self, n: int) -> str:
        return f"{self._tag(n)}:steps"

    def outbox(self, n: int) -> str:
        return f"{self._tag(n)}:outbox"

    def state(self, n: int, exec_id: str) -> str:
        return f"{self._tag(n)}:exec:{exec_id}"

    def command_guard(self, n: int, command_id: str) -> str:
        """The idempotency guard of one command id (not the commands stream: see ``commands``)."""
        return f"{self._tag(n)}:cmd:{command_id}"

    def done(self, n: int, root_id: str) -> str:
        return f"{self._tag(n)}:done:{root_id}"

    def deadlines(self, n: int) -> str:
        return f"{self._tag(n)}:deadlines"

    def delayed(self, n: int) -> str:
        """Zset of step entries (their encoded data) by the ms they are due: a retry's next
        attempt waits here, not in a worker (handlers/dataplane/delayed.py)."""
        return f"{self._tag(n)}:delayed"

    def definition(self, n: int, digest: str) -> str:
        return f"{self._tag(n)}:def:{digest}"

    def events(self, n: int, exec_id: str) -> str:
        """The previous version's event log of one execution (a stream, one entry per log
        entry): still read for executions it started (``handlers.interfaces.client.trace``)."""
        return f"{self._tag(n)}:events:{exec_id}"

    def log(self, n: int, root_id: str) -> str:
        """A callTool tree's event log: a string of lines, one per transition
        (``chatflow.runtime.state.decode_log``)."""
        return f"{self._tag(n)}:log:{root_id}"

    # -- projections: every key of one tool carries the hash tag {ns:toolId} -----
    def proj_log(self, tool_id: str, ns: str = "proj") -> str:
        """Zset of executionIds by occurredAt ms: the tool's log, and the dedup set."""
        return f"{self.prefix}{{{ns}:{tool_id}}}:log"

    def proj_events(self, tool_id: str, ns: str = "proj") -> str:
        """Hash executionId -> ToolExecutionStreamEvent JSON."""
        return f"{self.prefix}{{{ns}:{tool_id}}}:events"

    def proj_buckets(self, tool_id: str, ns: str = "proj") -> str:
        """Hash of hourly counters: ``<hour>:n``, ``<hour>:ok``, ``<hour>:ms``."""
        return f"{self.prefix}{{{ns}:{tool_id}}}:buckets"

    def proj_tools(self, ns: str = "proj") -> str:
        """Set of every toolId the projection has seen (deleted tools included)."""
        return f"{self.prefix}{ns}:tools"

    def partition_of_exec(self, exec_id: str) -> int:
        """Execution ids start with their partition: ``3-<uuid>[.<n>...]``."""
        return int(exec_id.split("-", 1)[0])


__all__ = [
    "COMMANDS_GROUP",
    "HISTORY_GROUP",
    "NATIVE_GROUP",
    "PROJECTION_GROUP",
    "RELAY_GROUP",
    "STEPS_GROUP",
    "TRACING_GROUP",
    "Keys",
    "PublicKeys",
]

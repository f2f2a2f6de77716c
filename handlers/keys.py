"""Every Redis key and stream name, in one place.

Public names follow SPEC and take the configurable prefix. Internal keys live
in partitions: every key of one partition carries the hash tag ``{cf:N}``, so
one Lua script can commit a step's state, its next step and its outbox
messages atomically, on a single node or a Redis Cluster alike. A callTool
tree lives entirely in its root's partition.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

COMMANDS_GROUP = "chatflow-workers"
STEPS_GROUP = "chatflow-workers"
RELAY_GROUP = "chatflow-relay"
PROJECTION_GROUP = "core-tool-executions"  # seed: the core's group on stream:tool-executions
NATIVE_GROUP = "chatflow-native-tools"  # workers started with --tools (docs/agents.md)


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = ""
    partitions: int = 4

    # -- public (SPEC) ---------------------------------------------------------
    @property
    def commands(self) -> str:
        return f"{self.prefix}stream:tool-commands"

    @property
    def results(self) -> str:
        return f"{self.prefix}stream:tool-results"

    @property
    def executions(self) -> str:
        return f"{self.prefix}stream:tool-executions"

    @property
    def llm_usage(self) -> str:
        return f"{self.prefix}stream:llm-usage"

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}stream:tool-dead-letters"

    def debug(self, contact_id: str) -> str:
        return f"{self.prefix}stream:debug:{contact_id}"

    def debug_flag(self, contact_id: str) -> str:
        """A per-contact switch that outlives commands: ``SET debug:contact:ID 1``."""
        return f"{self.prefix}debug:contact:{contact_id}"

    def tool(self, published_tool_id: str) -> str:
        return f"{self.prefix}tool:{published_tool_id}"

    def server(self, server_id: str) -> str:
        return f"{self.prefix}integration:server:{server_id}"

    def llm_credential(self, credential_id: str) -> str:
        """LLM credential cache projection (registry): JSON with the apiKey decrypted."""
        return f"{self.prefix}llm:credential:{credential_id}"

    def ai_agent(self, agent_id: str) -> str:
        """An AI agent's cache projection (registry): its linked, non-trashed tools."""
        return f"{self.prefix}ai-agent:{agent_id}"

    # -- native tools for agents (docs/agents.md) -------------------------------
    def native_calls(self, native_name: str) -> str:
        """Calls of one native tool; only workers that loaded it read this stream."""
        return f"{self.prefix}stream:native-tool-calls:{native_name}"

    @property
    def native_results(self) -> str:
        """Answers to native tool calls (the default reply stream)."""
        return f"{self.prefix}stream:native-tool-results"

    def native_tool(self, native_name: str) -> str:
        """A native tool's function spec, written by every worker that serves it."""
        return f"{self.prefix}native-tool:{native_name}"

    # -- registry (docs/registry.md) ---------------------------------------------
    @property
    def registry(self) -> str:
        """The registry's event log; every registry change is one entry."""
        return f"{self.prefix}stream:registry"

    @property
    def registry_versions(self) -> str:
        """Per-entity versions, in the log's slot (hash tag = the stream's name)."""
        return f"{{{self.registry}}}:versions"

    def registry_view(self, kind: str) -> str:
        """A list the API serves (hash id -> JSON): ``tools``, ``servers``, ``credentials``."""
        return f"{self.prefix}registry:view:{kind}"

    @property
    def registry_projected(self) -> str:
        """The id of the last log entry the projections reflect."""
        return f"{self.prefix}registry:projected"

    # -- access control (docs/security.md) ----------------------------------------
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

    @property
    def trees_ended(self) -> str:
        """Hash reason -> trees ended from outside the machine (handlers/trees.py)."""
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

    def command(self, n: int, command_id: str) -> str:
        return f"{self._tag(n)}:cmd:{command_id}"

    def done(self, n: int, root_id: str) -> str:
        return f"{self._tag(n)}:done:{root_id}"

    def deadlines(self, n: int) -> str:
        return f"{self._tag(n)}:deadlines"

    def definition(self, n: int, digest: str) -> str:
        return f"{self._tag(n)}:def:{digest}"

    def events(self, n: int, exec_id: str) -> str:
        return f"{self._tag(n)}:events:{exec_id}"

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

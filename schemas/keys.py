"""The key and stream names that producers, the SDK and the workers share (SPEC's public names).

They take the configurable prefix. The runtime's internal keys (partitions, state, steps)
are the workers' business and live in chatflow.handlers.keys, which extends this class.
"""

from __future__ import annotations

from dataclasses import dataclass

COMMANDS_GROUP = "chatflow-workers"
STEPS_GROUP = "chatflow-workers"
RELAY_GROUP = "chatflow-relay"
PROJECTION_GROUP = "core-tool-executions"  # the core's group on stream:tool-executions
NATIVE_GROUP = "chatflow-native-tools"  # workers started with --tools (docs/agents.md)


@dataclass(frozen=True, slots=True)
class PublicKeys:
    prefix: str = ""

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

"""Publish-time checks of fetchMedia and callAI blocks, each problem with its JSON path.

Pure: the caller says which credentials exist (``credential_exists``), so the
registry can answer from its database and ``chatflow publish`` from Redis
(``llm:credential:{id}``). The per-capability required fields are already
enforced when the definition parses (``CallAIBlock``); these are the checks
that need more than one field, or the outside world.
"""

from __future__ import annotations

from collections.abc import Callable

from chatflow.schemas.definition import CallAIBlock, FetchMediaBlock, ToolDefinition


def credential_ids(definition: ToolDefinition) -> set[str]:
    """Every LlmCredential a definition's callAI blocks use."""
    return {b.llmCredentialId for b in definition.blocks.values() if isinstance(b, CallAIBlock)}


def check_ai_blocks(definition: ToolDefinition,
                    credential_exists: Callable[[str], bool]) -> list[str]:
    problems: list[str] = []
    for key, block in definition.blocks.items():
        path = f"blocks.{key}"
        if isinstance(block, FetchMediaBlock):
            field = "mediaIdVariable" if block.mode == "whatsapp" else "urlVariable"
            if not getattr(block, field).strip():
                problems.append(f"{path}.{field}: required when mode is {block.mode!r}")
        elif isinstance(block, CallAIBlock):
            problems += _check_callai(path, block, credential_exists)
    return problems


def _check_callai(path: str, block: CallAIBlock,
                  credential_exists: Callable[[str], bool]) -> list[str]:
    problems: list[str] = []
    credential = block.llmCredentialId.strip()
    if not credential:
        problems.append(f"{path}.llmCredentialId: required")
    elif not credential_exists(credential):
        problems.append(f"{path}.llmCredentialId: no LLM credential {credential!r}")
    if not block.outputVariable.strip():
        problems.append(f"{path}.outputVariable: required")
    return problems

"""Publish-time checks of fetchMedia and callAI blocks: pure, and through ``chatflow publish``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis

from chatflow.handlers.cli.main import main
from chatflow.handlers.keys import Keys
from chatflow.handlers.operations import logging as logging_setup
from chatflow.handlers.redis_client import make_client
from chatflow.handlers.registry import Registry
from chatflow.handlers.registry.crypto import SecretBox
from chatflow.handlers.registry.models import CredentialCreate
from chatflow.handlers.registry.servers import CredentialOps
from chatflow.runtime.blocks.ai_checks import check_ai_blocks, credential_ids
from chatflow.runtime.validation import parse_definition
from chatflow.schemas.definition import ToolDefinition
from tests.api.support import ENCRYPTION_KEY
from tests.blocks_ai.helpers import call_ai, fetch_media, returns, tool

DEFINITION = tool(fetch_media("fetch", "ask"),
                  call_ai("ask", "done", "transcribeAudio", llmCredentialId="cred-pub"),
                  returns())


def test_check_ai_blocks_names_each_missing_credential_by_its_json_path() -> None:
    definition = ToolDefinition.model_validate(DEFINITION)

    assert credential_ids(definition) == {"cred-pub"}
    assert check_ai_blocks(definition, lambda c: c == "cred-pub") == []
    assert check_ai_blocks(definition, lambda c: False) == [
        "blocks.ask.llmCredentialId: no LLM credential 'cred-pub'"]


def test_check_ai_blocks_wants_the_variable_the_fetch_mode_reads() -> None:
    definition = ToolDefinition.model_validate(tool(
        fetch_media("a", "b", mediaIdVariable=" "),
        fetch_media("b", "done", mode="url", urlVariable=""), returns()))

    assert check_ai_blocks(definition, lambda c: True) == [
        "blocks.a.mediaIdVariable: required when mode is 'whatsapp'",
        "blocks.b.urlVariable: required when mode is 'url'"]


def test_a_capability_without_its_required_fields_does_not_parse() -> None:
    block = call_ai("ask", "done", "analyzeDocument", model="gpt-4o")

    definition, problems = parse_definition(tool(block, returns()))

    assert definition is None
    assert problems == ["blocks.ask: Value error, capability 'analyzeDocument' needs: "
                        "prompt, maxPages"]


@pytest.fixture
def tool_file(tmp_path: Path) -> str:
    path = tmp_path / "voice.json"
    path.write_text(json.dumps({"id": "pt-pub", "toolId": "t-pub", "definition": DEFINITION}))
    return str(path)


def test_chatflow_publish_refuses_a_tool_whose_credential_is_not_in_redis(
        redis_url: str, prefix: str, tool_file: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    monkeypatch.setenv("CHATFLOW_ENCRYPTION_KEY", ENCRYPTION_KEY)
    monkeypatch.setattr(logging_setup, "configure_logging", lambda: None)  # keep structlog's
    keys = Keys(prefix)
    client = redis.Redis.from_url(redis_url)

    refused = main(["publish", "--redis-url", redis_url, tool_file])
    message = capsys.readouterr().err
    asyncio.run(_create_credential(redis_url, keys, "cred-pub"))  # writes llm:credential:…
    published = main(["publish", "--redis-url", redis_url, tool_file])

    assert refused == 1
    assert "definition.blocks.ask.llmCredentialId: no LLM credential 'cred-pub'" in message
    assert client.get(keys.tool("pt-pub")) is not None
    assert published == 0


async def _create_credential(redis_url: str, keys: Keys, cred_id: str) -> None:
    """Through the registry, which ``chatflow publish`` checks callAI credentials against."""
    client = make_client(redis_url)
    try:
        await CredentialOps(Registry(client, keys, SecretBox(ENCRYPTION_KEY))).create(
            CredentialCreate(id=cred_id, name="OpenAI", apiKey="k"))
    finally:
        await client.aclose()


def test_chatflow_publish_check_without_redis_says_credentials_were_not_checked(
        tool_file: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("CHATFLOW_REDIS_URL", raising=False)

    code = main(["publish", "--check", tool_file])

    assert code == 0
    assert "note: LLM credentials not checked" in capsys.readouterr().err

"""docs/asyncapi.json is what FastStream generates from the code, and covers the public streams."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from chatflow.handlers.interfaces import asyncapi
from chatflow.schemas.wire import (
    DeadLetter,
    ExecuteToolCommand,
    ToolExecutionStreamEvent,
    ToolResult,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "asyncapi.json"


def test_the_committed_asyncapi_document_matches_the_code() -> None:
    assert DOC.read_text(encoding="utf-8") == asyncapi.render(), (
        "docs/asyncapi.json drifted: "
        "run `python -m chatflow.handlers.interfaces.asyncapi > docs/asyncapi.json`")


def test_every_public_stream_is_documented_with_its_address() -> None:
    doc = json.loads(DOC.read_text(encoding="utf-8"))
    addresses = {c["address"] for c in doc["channels"].values()}
    assert {"stream:tool-commands", "stream:tool-results", "stream:tool-executions",
            "stream:llm-usage", "stream:tool-dead-letters", "stream:debug:{contactId}"} <= addresses
    assert doc["operations"]["tool-commands"]["action"] == "receive"
    assert doc["operations"]["tool-results"]["action"] == "send"


def test_the_payload_schemas_have_the_fields_of_the_wire_types() -> None:
    schemas = json.loads(DOC.read_text(encoding="utf-8"))["components"]["schemas"]
    for struct in (ExecuteToolCommand, ToolResult, ToolExecutionStreamEvent, DeadLetter):
        fields = {f.encode_name for f in msgspec.structs.fields(struct)}
        assert set(schemas[struct.__name__]["properties"]) == fields

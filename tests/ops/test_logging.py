"""Logs: JSON lines in production with the execution's ids on every line, secrets redacted."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import structlog

from chatflow.handlers.operations.logging import bound_execution, configure_logging


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    previous = structlog.get_config()
    configure_logging("DEBUG", json=True, stream=stream)
    try:
        yield stream
    finally:
        structlog.configure(**previous)
        structlog.contextvars.clear_contextvars()


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_secrets_are_redacted_from_every_log_line(json_logs: io.StringIO) -> None:
    log = structlog.get_logger("test")
    log.info("calling the api", authorization="Bearer abc.def",
             url="https://x/y?api_key=SEKRET&q=1",
             headers={"X-Api-Key": "k-123", "Accept": "json"},
             note="sent Bearer eyJhbGciOi.payload.sig upstream", password="hunter2")
    (line,) = lines(json_logs)
    text = json.dumps(line)
    for secret in ("abc.def", "SEKRET", "k-123", "eyJhbGciOi", "hunter2"):
        assert secret not in text
    assert line["headers"] == {"X-Api-Key": "***", "Accept": "json"}
    assert line["url"] == "https://x/y?api_key=***&q=1"


def test_the_ids_of_an_execution_are_bound_to_every_line_inside_it(
        json_logs: io.StringIO) -> None:
    root = SimpleNamespace(commandId="cmd-log-1", contactId="5511000")
    state = SimpleNamespace(execId="2-abc.3", rootId="2-abc", toolId="t-any",
                            publishedToolId="pt-any", root=root)
    log = structlog.get_logger("test")
    with bound_execution(state):
        log.info("first")
        log.warning("second", detail="x")
    log.info("outside")
    first, second, outside = [line for line in lines(json_logs)
                              if line["event"] in ("first", "second", "outside")]
    for line in (first, second):
        assert (line["command_id"], line["execution_id"], line["root_id"], line["tool_id"],
                line["contact_id"]) == ("cmd-log-1", "2-abc.3", "2-abc", "t-any", "5511000")
    assert "execution_id" not in outside

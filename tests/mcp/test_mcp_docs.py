"""docs/agents.md says of MCP over HTTP what tests/mcp/test_mcp_server.py pins."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def test_the_docs_give_401_for_another_workspace_and_is_error_for_a_viewer_never_403() -> None:
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert "403" not in text
    assert "a key of another workspace answer 401" in text
    assert "a viewer key lists the tools and a call answers `isError`" in text

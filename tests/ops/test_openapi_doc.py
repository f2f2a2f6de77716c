"""docs/openapi.json, from which the docs site's API reference is built, is what the code
serves at /api/openapi.json."""

from __future__ import annotations

import json
from pathlib import Path

from chatflow.handlers.interfaces import openapi

DOC = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_committed_openapi_document_matches_the_code() -> None:
    assert DOC.read_text(encoding="utf-8") == openapi.render(), (
        "docs/openapi.json drifted: "
        "run `python -m chatflow.handlers.interfaces.openapi > docs/openapi.json`")


def test_it_documents_every_api_route_with_its_key() -> None:
    document = json.loads(DOC.read_text(encoding="utf-8"))
    assert document["openapi"].startswith("3.")
    assert "/api/tools" in document["paths"] and "/api/executions/{execution_id}/fork" in (
        document["paths"])
    assert document["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"

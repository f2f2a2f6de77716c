"""The HTTP API's OpenAPI document, as ``docs/openapi.json`` keeps it for the docs site.

``python -m chatflow.handlers.interfaces.openapi > docs/openapi.json`` regenerates the file
(tests/ops/test_openapi_doc.py fails when it drifts from the code); the site's API reference
(docs/api.md) is rendered from it. The running API serves the same document at
``/api/openapi.json``. Built with the default settings, so the environment cannot move it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..api.app import create_app
from ..settings import Settings


def document() -> dict[str, Any]:
    # No connection is made: the app's Redis client is created in its lifespan, never run here.
    settings = Settings(redis_url="redis://127.0.0.1:6379/0", api_base_path="/api")
    return create_app(settings).openapi()


def render() -> str:
    return json.dumps(document(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())

"""The Studio (``/studio/``) and the offline API docs (``{base}/docs``), served from the wheel.

The Studio is static: hand-written ES modules that call the JSON API with ``fetch`` and a bearer
key (docs/studio.md says why). Swagger UI's files come from the ``fastapi-offline`` package, so
``/api/docs`` works with no CDN. Every page is sent with a Content-Security-Policy that allows
scripts from this origin only.
"""

from __future__ import annotations

from .app import mount

__all__ = ["mount"]

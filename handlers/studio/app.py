"""Mounting the Studio's files and the API docs page on the FastAPI app."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(str(files("chatflow.handlers.studio") / "static"))
STUDIO_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
# Swagger UI (React) sets style attributes while it renders; scripts stay same-origin only.
DOCS_CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; "
            "frame-ancestors 'none'")
SWAGGER_PATH = "/studio/swagger-ui"


def security_headers(csp: str) -> list[tuple[bytes, bytes]]:
    return [(b"content-security-policy", csp.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"x-frame-options", b"DENY"),
            (b"cross-origin-opener-policy", b"same-origin")]


class WithHeaders:
    """An ASGI wrapper that adds fixed headers to every response of ``app``, its errors included."""

    def __init__(self, app: ASGIApp, headers: list[tuple[bytes, bytes]]) -> None:
        self.app = app
        self.headers = headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        try:
            await self.app(scope, receive, send_with)
        except HTTPException as exc:
            # StaticFiles raises its 404 (and 405) for the app's handler, which answers without
            # our headers: answered here instead, so a miss carries them too.
            reply = PlainTextResponse(str(exc.detail), status_code=exc.status_code, headers=exc.headers)
            await reply(scope, receive, send_with)


def swagger_assets() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def docs_page(openapi_url: str, title: str) -> str:
    # No inline script: the initializer is a file that reads the document URL from its tag.
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - API docs</title>
<link rel="stylesheet" href="{SWAGGER_PATH}/swagger-ui.css">
<link rel="icon" href="{SWAGGER_PATH}/favicon.png"></head>
<body><div id="swagger-ui"></div>
<script src="{SWAGGER_PATH}/swagger-ui-bundle.js"></script>
<script src="/studio/swagger-init.js" data-openapi-url="{openapi_url}"></script>
</body></html>"""


def mount(app: FastAPI, base: str) -> None:
    """``/studio/`` (the console), ``/studio/swagger-ui/`` (Swagger UI's files) and the docs
    page at ``{base}/docs``; call with ``docs_url=None`` on the app."""
    app.mount(SWAGGER_PATH, WithHeaders(StaticFiles(directory=swagger_assets()),
                                        security_headers(DOCS_CSP)), name="swagger-ui")
    page = docs_page(f"{base}/openapi.json", app.title)

    @app.get(f"{base}/docs", include_in_schema=False)
    async def api_docs() -> HTMLResponse:
        return HTMLResponse(page, headers={k.decode(): v.decode()
                                           for k, v in security_headers(DOCS_CSP)})

    # Routes of their own, outside the mounted files: each sends the Studio's headers itself.
    studio_headers = {k.decode(): v.decode() for k, v in security_headers(STUDIO_CSP)}

    @app.get("/studio/config.json", include_in_schema=False)
    async def studio_config() -> JSONResponse:
        return JSONResponse({"apiBase": base}, headers={"Cache-Control": "no-store", **studio_headers})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        # Browsers ask for /favicon.ico on any page the API serves; the Studio links its own.
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml",
                            headers={"Cache-Control": "max-age=86400", **studio_headers})

    @app.get("/studio", include_in_schema=False)
    async def studio_slash() -> RedirectResponse:
        return RedirectResponse("/studio/", status_code=308, headers=studio_headers)

    # Gzip for whoever asks: the vendored editor and the modules shrink to about a third.
    files_app = GZipMiddleware(StaticFiles(directory=STATIC, html=True), minimum_size=512)
    app.mount("/studio", WithHeaders(files_app, security_headers(STUDIO_CSP)), name="studio")

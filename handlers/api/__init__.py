"""The HTTP API (FastAPI): tools, integration servers, LLM credentials, test runs."""

from .app import create_app

__all__ = ["create_app"]

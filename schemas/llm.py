"""LLM credentials as the runtime reads them from their cache projection.

The registry is the only crypto boundary: it
decrypts the stored key and writes ``{prefix}llm:credential:{credentialId}``
holding this JSON, with ``apiKey`` in plain text, like the integration
server headers. The runtime only reads it, once per callAI block.

``provider`` is ``"openai"``: the OpenAI wire format, spoken to any
compatible endpoint through ``baseUrl``. The key is kept out of ``repr`` so a
stray log line or traceback never prints it.
"""

from __future__ import annotations

import msgspec

OPENAI_BASE_URL = "https://api.openai.com/v1"


class LlmCredential(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    apiKey: str
    name: str | None = ""
    provider: str | None = "openai"
    baseUrl: str | None = None
    # scheme://host:port the apiKey was saved for; the runtime sends it nowhere else
    apiKeyOrigin: str | None = None
    # the workspace that owns it: a callAI of another workspace's execution finds no credential
    workspace: str = "default"

    @property
    def base_url(self) -> str:
        """``baseUrl``, or OpenAI's own when the credential leaves it empty."""
        return (self.baseUrl or OPENAI_BASE_URL).rstrip("/")

    @property
    def provider_name(self) -> str:
        return self.provider or "openai"

    def __repr__(self) -> str:
        return (f"LlmCredential(id={self.id!r}, name={self.name!r}, provider={self.provider!r}, "
                f"baseUrl={self.baseUrl!r}, apiKeyOrigin={self.apiKeyOrigin!r}, apiKey='***')")

    __str__ = __repr__


credential_decoder = msgspec.json.Decoder(LlmCredential)

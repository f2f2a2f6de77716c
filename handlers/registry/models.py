"""Request bodies of the registry's operations (the API and the CLI share them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chatflow.schemas.definition import HttpMethod
from chatflow.schemas.edge import (
    DEFAULT_IDEMPOTENCY_HEADER,
    CircuitBreakerPolicy,
    RetryPolicy,
    ServerLimits,
    header_name,
)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _http_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value


class ToolCreate(_In):
    id: str | None = Field(default=None, min_length=1, max_length=128)
    name: str = Field(default="Nova ferramenta", min_length=1)
    description: str | None = None
    kind: Literal["custom", "native"] = "custom"
    nativeName: str | None = Field(default=None, min_length=1)
    definition: dict[str, Any] | None = None


class ToolPatch(_In):
    name: str | None = Field(default=None, min_length=1)
    description: str | None = None
    definition: dict[str, Any] | None = None
    version: int | None = None


class VersionIn(_In):
    version: int | None = None


class PublishIn(_In):
    """``POST /tools/:id/publish``: ``version`` the draft's (optional), ``note`` kept in the
    published version, ``force`` publishes past failing saved test cases."""

    version: int | None = None
    note: str | None = Field(default=None, max_length=2000)
    force: bool = False


class RollbackIn(_In):
    """``POST /tools/:id/rollback``: publish version ``version`` again as a new version;
    ``force`` rolls back past saved test cases that fail on it (a publish's rule)."""

    version: int = Field(ge=1)
    note: str | None = Field(default=None, max_length=2000)
    force: bool = False


class HeaderIn(_In):
    name: str = Field(min_length=1)
    value: str
    secret: bool = False


class _ServerEdge(_In):
    """An integration server's extensions (schemas/edge.py, SPEC): its endpoints' default
    ``retry``, its ``limits`` and ``circuitBreaker`` (null removes one), and the
    ``idempotencyHeader`` non-GET calls carry (null: none; absent: ``Idempotency-Key``)."""

    retry: RetryPolicy | None = None
    limits: ServerLimits | None = None
    circuitBreaker: CircuitBreakerPolicy | None = None
    idempotencyHeader: str | None = DEFAULT_IDEMPOTENCY_HEADER

    _header = field_validator("idempotencyHeader")(header_name)


SERVER_EDGE_FIELDS = ("retry", "limits", "circuitBreaker", "idempotencyHeader")


class ServerCreate(_ServerEdge):
    id: str | None = Field(default=None, min_length=1, max_length=128)
    name: str = Field(min_length=1)
    baseUrl: str
    description: str | None = None
    headers: list[HeaderIn] = Field(default_factory=list)

    _url = field_validator("baseUrl")(_http_url)


class ServerPatch(_ServerEdge):
    name: str | None = Field(default=None, min_length=1)
    baseUrl: str | None = None
    description: str | None = None
    headers: list[HeaderIn] | None = None
    version: int | None = None

    _url = field_validator("baseUrl")(_http_url)


class ParamIn(_In):
    name: str = Field(min_length=1)
    in_: Literal["route", "query", "body"] = Field(alias="in")
    required: bool = False
    description: str | None = None


class EndpointFields(_In):
    name: str = Field(min_length=1)
    path: str = ""
    method: HttpMethod = "GET"
    headers: list[HeaderIn] = Field(default_factory=list)
    bodyTemplate: Any = None
    params: list[ParamIn] = Field(default_factory=list)
    responses: dict[str, str] | None = None
    description: str | None = None


class EndpointCreate(EndpointFields):
    id: str | None = Field(default=None, min_length=1, max_length=128)


class EndpointPatch(_In):
    name: str | None = Field(default=None, min_length=1)
    path: str | None = None
    method: HttpMethod | None = None
    headers: list[HeaderIn] | None = None
    bodyTemplate: Any = None
    params: list[ParamIn] | None = None
    responses: dict[str, str] | None = None
    description: str | None = None
    version: int | None = None


class ParamValue(_In):
    name: str = Field(min_length=1)
    in_: Literal["route", "query", "body"] = Field(alias="in")
    value: str


class EndpointTest(_In):
    """Run a saved endpoint: paramMappings are interpolated with ``variables``."""

    paramMappings: list[ParamValue] = Field(default_factory=list)
    variables: dict[str, Any] = Field(default_factory=dict)


class AdhocEndpointTest(EndpointTest):
    endpoint: EndpointFields


class CredentialCreate(_In):
    id: str | None = Field(default=None, min_length=1, max_length=128)
    name: str = Field(min_length=1)
    provider: Literal["openai"] = "openai"
    baseUrl: str | None = None
    apiKey: str = Field(min_length=1)

    _url = field_validator("baseUrl")(_http_url)


class CredentialPatch(_In):
    name: str | None = Field(default=None, min_length=1)
    baseUrl: str | None = None
    apiKey: str | None = Field(default=None, min_length=1)
    version: int | None = None

    _url = field_validator("baseUrl")(_http_url)


def dump(model: BaseModel, *, exclude: set[str] | None = None) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True,
                            exclude=exclude or set())

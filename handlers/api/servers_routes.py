"""``/integration-servers`` and ``/llm-credentials``."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from ..registry.errors import ApiCode, Invalid
from ..registry.models import (
    AdhocEndpointTest,
    CredentialCreate,
    CredentialPatch,
    EndpointCreate,
    EndpointPatch,
    EndpointTest,
    ServerCreate,
    ServerPatch,
)
from .auth import Caller, Writer, shown_to
from .contract import answers
from .deps import Services, services

router = APIRouter()
Svc = Annotated[Services, Depends(services)]
SERVERS = "/integration-servers"
OPENAPI_BODY = {"requestBody": {"required": True, "content": {
    "application/yaml": {"schema": {"type": "string"}},
    "application/json": {"schema": {"type": "object", "description":
                                     "the spec itself, or {\"spec\": <text or object>}"}},
}}}


@router.get(SERVERS, tags=["integration servers"],
            summary="List servers with their endpoints and usage (usedBy)")
async def list_servers(svc: Svc, who: Caller) -> list[dict[str, Any]]:
    return shown_to(who, await svc.servers.list_all(scope=who.scope))


@router.post(SERVERS, responses=answers(409),
             status_code=201, tags=["integration servers"], summary="Create a server")
async def create_server(svc: Svc, who: Writer, body: ServerCreate) -> dict[str, Any]:
    return await svc.servers.create(body, scope=who.scope)


@router.get(SERVERS + "/{server_id}", responses=answers(404),
            tags=["integration servers"], summary="One server")
async def get_server(svc: Svc, who: Caller, server_id: str) -> dict[str, Any]:
    return shown_to(who, await svc.servers.view(server_id, scope=who.scope))


@router.patch(SERVERS + "/{server_id}", responses=answers(404, 409),
              tags=["integration servers"], summary="Update a server")
async def update_server(svc: Svc, who: Writer, server_id: str, body: ServerPatch) -> dict[str, Any]:
    return await svc.servers.update(server_id, body, scope=who.scope)


@router.delete(SERVERS + "/{server_id}", responses=answers(404, 409),
               tags=["integration servers"], summary="Remove a server")
async def delete_server(svc: Svc, who: Writer, server_id: str) -> dict[str, Any]:
    return await svc.servers.delete(server_id, scope=who.scope)


@router.get(SERVERS + "/{server_id}/endpoints", responses=answers(404), tags=["integration servers"],
            summary="List a server's endpoints")
async def list_endpoints(svc: Svc, who: Caller, server_id: str) -> list[dict[str, Any]]:
    return shown_to(who, await svc.servers.endpoints(server_id, scope=who.scope))


@router.post(SERVERS + "/{server_id}/endpoints", responses=answers(404, 409),
             status_code=201, tags=["integration servers"],
             summary="Create an endpoint by hand")
async def create_endpoint(svc: Svc, who: Writer,
                          server_id: str, body: EndpointCreate) -> dict[str, Any]:
    return await svc.servers.add_endpoint(server_id, body, scope=who.scope)


@router.post(SERVERS + "/{server_id}/endpoints/test", responses=answers(404), tags=["integration servers"],
             summary="Run an ad-hoc endpoint against the real API")
async def test_adhoc(svc: Svc, who: Writer,
                     server_id: str, body: AdhocEndpointTest) -> dict[str, Any]:
    return await svc.servers.test_adhoc(server_id, body, scope=who.scope)


@router.patch(SERVERS + "/{server_id}/endpoints/{endpoint_id}", responses=answers(404, 409),
              tags=["integration servers"],
              summary="Update an endpoint")
async def update_endpoint(svc: Svc, who: Writer, server_id: str, endpoint_id: str,
                          body: EndpointPatch) -> dict[str, Any]:
    return await svc.servers.update_endpoint(server_id, endpoint_id, body, scope=who.scope)


@router.delete(SERVERS + "/{server_id}/endpoints/{endpoint_id}", responses=answers(404, 409),
               tags=["integration servers"],
               summary="Remove an endpoint")
async def delete_endpoint(svc: Svc, who: Writer,
                          server_id: str, endpoint_id: str) -> dict[str, Any]:
    return await svc.servers.delete_endpoint(server_id, endpoint_id, scope=who.scope)


@router.post(SERVERS + "/{server_id}/endpoints/{endpoint_id}/test", responses=answers(404),
             tags=["integration servers"],
             summary="Run a saved endpoint against the real API (the callEndpoint flow action)")
async def test_endpoint(svc: Svc, who: Writer, server_id: str, endpoint_id: str,
                        body: EndpointTest | None = None) -> dict[str, Any]:
    return await svc.servers.test(server_id, endpoint_id, body or EndpointTest(), scope=who.scope)


@router.post(SERVERS + "/{server_id}/import-openapi", responses=answers(404, 409, 413), status_code=201,
             tags=["integration servers"], openapi_extra=OPENAPI_BODY,
             summary="Import an OpenAPI 3.0/3.1 spec (YAML or JSON): endpoints in one batch")
async def import_openapi(svc: Svc, who: Writer, server_id: str, request: Request) -> dict[str, Any]:
    text = await spec_text(request)
    endpoints = await svc.servers.import_openapi(server_id, text, scope=who.scope)
    return {"serverId": server_id, "imported": len(endpoints), "endpoints": endpoints}


async def spec_text(request: Request) -> str:
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid("the OpenAPI spec must be UTF-8 text", code=ApiCode.INVALID_OPENAPI) from exc
    if not text.strip():
        raise Invalid("send the OpenAPI spec as the request body (YAML or JSON)",
                      code=ApiCode.INVALID_OPENAPI)
    if "json" in request.headers.get("content-type", ""):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return text  # the parser reports where it broke, or how deep it went
        if isinstance(data, dict) and "spec" in data and "openapi" not in data:
            spec = data["spec"]
            return spec if isinstance(spec, str) else json.dumps(spec)
    return text


@router.get("/llm-credentials", tags=["llm credentials"], summary="List LLM credentials")
async def list_credentials(svc: Svc, who: Caller) -> list[dict[str, Any]]:
    return shown_to(who, await svc.credentials.list_all(scope=who.scope))


@router.post("/llm-credentials", responses=answers(409), status_code=201, tags=["llm credentials"],
             summary="Create an LLM credential (the API key is stored encrypted)")
async def create_credential(svc: Svc, who: Writer, body: CredentialCreate) -> dict[str, Any]:
    return await svc.credentials.create(body, scope=who.scope)


@router.get("/llm-credentials/{cred_id}", responses=answers(404),
            tags=["llm credentials"], summary="One credential")
async def get_credential(svc: Svc, who: Caller, cred_id: str) -> dict[str, Any]:
    return shown_to(who, await svc.credentials.view(cred_id, scope=who.scope))


@router.patch("/llm-credentials/{cred_id}", responses=answers(404, 409), tags=["llm credentials"],
              summary="Update an LLM credential")
async def update_credential(svc: Svc, who: Writer,
                            cred_id: str, body: CredentialPatch) -> dict[str, Any]:
    return await svc.credentials.update(cred_id, body, scope=who.scope)


@router.delete("/llm-credentials/{cred_id}", responses=answers(404, 409), tags=["llm credentials"],
               summary="Remove an LLM credential")
async def delete_credential(svc: Svc, who: Writer, cred_id: str) -> dict[str, Any]:
    return await svc.credentials.delete(cred_id, scope=who.scope)

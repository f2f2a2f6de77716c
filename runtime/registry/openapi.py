"""OpenAPI 3.0 / 3.1 import: a spec's operations become endpoint drafts.

Reading is bounded and closed to the outside world (``openapi_load.py``: size, depth, node
count with YAML aliases expanded, a deadline, no external ``$ref``); validation is
``openapi-spec-validator`` and ``$ref`` resolution ``jsonschema-path``, both given no
handler for any URL scheme, so nothing outside the document can be fetched or read.
Only name, path, method, declared params and the responses' descriptions are kept; the
spec itself is not stored (docs/registry.md).
"""

from __future__ import annotations

import time
from typing import Any

from jsonschema_path import SchemaPath
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from referencing.exceptions import Unresolvable

from .openapi_load import OpenApiError, SpecLimits, load_document

__all__ = ["OpenApiError", "SpecLimits", "load_spec", "parse_openapi"]

METHODS = ("get", "post", "put", "patch", "delete", "head", "options")
WHERE = {"path": "route", "query": "query"}
# No resolver for any scheme: a reference that leaves the document cannot be followed.
NO_HANDLERS: dict[str, Any] = {}


def _spec_path(data: dict[str, Any]) -> SchemaPath:
    return SchemaPath.from_dict(data, handlers=NO_HANDLERS)


def load_spec(text: str, limits: SpecLimits | None = None,
              deadline: float | None = None) -> dict[str, Any]:
    limits = limits or SpecLimits()
    if deadline is None:
        deadline = time.monotonic() + limits.timeout_s
    data = load_document(text, limits, deadline)
    if not isinstance(data, dict):
        raise OpenApiError("$: a spec must be an object with 'openapi', 'info' and 'paths'")
    version = str(data.get("openapi", ""))
    if not (version.startswith("3.0") or version.startswith("3.1")):
        raise OpenApiError(f"$.openapi: {version or 'missing'!r} is not OpenAPI 3.0 or 3.1")
    validator = OpenAPIV30SpecValidator if version.startswith("3.0") else OpenAPIV31SpecValidator
    try:
        validator(_spec_path(data)).validate()
    except OpenAPIValidationError as exc:
        raise OpenApiError(f"{exc.json_path}: {exc.message}") from exc
    except Unresolvable as exc:
        raise _dangling(exc) from None
    except RecursionError as exc:
        raise OpenApiError("$: the references nest too deep (a $ref cycle?)") from exc
    except Exception as exc:  # an unresolvable internal $ref and the like; no file text here
        raise OpenApiError(f"$: {type(exc).__name__}") from exc
    return data


def parse_openapi(text: str, limits: SpecLimits | None = None,
                  deadline: float | None = None) -> list[dict[str, Any]]:
    """Endpoint drafts ``{name, path, method, params, responses}`` in the spec's order."""
    spec = _spec_path(load_spec(text, limits, deadline))
    try:
        return _drafts(spec)
    except Unresolvable as exc:  # the validator lets some dangling internal $refs through
        raise _dangling(exc) from None
    except RecursionError as exc:
        raise OpenApiError("$: the references nest too deep (a $ref cycle?)") from exc


def _dangling(exc: Unresolvable) -> OpenApiError:
    # Only the reference: the library's own message quotes the whole document.
    return OpenApiError(f"$ref {str(exc.ref)!r} does not resolve inside the document")


def _drafts(spec: SchemaPath) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if "paths" not in spec:
        return out
    paths = spec / "paths"
    for raw_path in paths.str_keys():
        item = paths / raw_path
        shared = _params(item)
        for method in METHODS:
            if method not in item:
                continue
            op = item / method
            params = _merge(shared, _params(op)) + _body_params(op)
            out.append({
                "name": _name(op, method, str(raw_path)), "path": str(raw_path),
                "method": method.upper(), "params": params,
                "responses": _responses(op), "description": _str(op, "summary"),
            })
    return out


def _str(node: SchemaPath, key: str) -> str | None:
    return str(node[key]) if key in node else None


def _name(op: SchemaPath, method: str, path: str) -> str:
    return _str(op, "operationId") or _str(op, "summary") or f"{method.upper()} {path}"


def _params(node: SchemaPath) -> list[dict[str, Any]]:
    if "parameters" not in node:
        return []
    out = []
    for param in node / "parameters":
        where = WHERE.get(str(param["in"]))
        if where is None:  # header and cookie params are the endpoint's headers, not params
            continue
        required = bool(param["required"]) if "required" in param else where == "route"
        out.append({"name": str(param["name"]), "in": where, "required": required,
                    "description": _str(param, "description")})
    return out


def _merge(shared: list[dict[str, Any]], own: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = {(p["name"], p["in"]) for p in own}
    return [p for p in shared if (p["name"], p["in"]) not in keys] + own


def _body_params(op: SchemaPath) -> list[dict[str, Any]]:
    if "requestBody" not in op:
        return []
    content = op / "requestBody" / "content" if "content" in op / "requestBody" else None
    if content is None:
        return []
    media = next((m for m in content.str_keys() if "json" in str(m)), None)
    if media is None or "schema" not in content / media:
        return []
    schema = content / media / "schema"
    required: set[str] = set()
    names: list[str] = []
    for part in [schema, *((schema / "allOf") if "allOf" in schema else [])]:
        if "required" in part:
            # the values themselves: iterating a SchemaPath yields paths, not names
            required |= {str(r) for r in (part / "required").read_value()}
        if "properties" in part:
            names += [str(k) for k in (part / "properties").str_keys() if str(k) not in names]
    return [{"name": n, "in": "body", "required": n in required, "description": None}
            for n in names]


def _responses(op: SchemaPath) -> dict[str, str]:
    if "responses" not in op:
        return {}
    responses = op / "responses"
    return {str(code): _str(responses / code, "description") or "" for code in responses.str_keys()}

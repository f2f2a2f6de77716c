"""OpenAPI 3.0 / 3.1 import: a spec's operations become endpoint drafts.

Parsing is ``yaml.safe_load`` (JSON is YAML), validation is
``openapi-spec-validator`` and ``$ref`` resolution is ``jsonschema-path``:
no hand-written parser. Only name, path, method, declared params and the
responses' descriptions are kept; the spec itself is not stored (seed).
"""

from __future__ import annotations

from typing import Any

import yaml
from jsonschema_path import SchemaPath
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

METHODS = ("get", "post", "put", "patch", "delete", "head", "options")
WHERE = {"path": "route", "query": "query"}


class OpenApiError(ValueError):
    """Raised when a spec cannot be read or is not valid OpenAPI; says where it broke."""


def load_spec(text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown place"
        raise OpenApiError(f"not YAML or JSON at {where}: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise OpenApiError(f"not YAML or JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise OpenApiError("$: a spec must be an object with 'openapi', 'info' and 'paths'")
    version = str(data.get("openapi", ""))
    if not (version.startswith("3.0") or version.startswith("3.1")):
        raise OpenApiError(f"$.openapi: {version or 'missing'!r} is not OpenAPI 3.0 or 3.1")
    try:
        validate(data)
    except OpenAPIValidationError as exc:
        raise OpenApiError(f"{exc.json_path}: {exc.message}") from exc
    except Exception as exc:  # unresolvable $ref and the like
        raise OpenApiError(f"$: {type(exc).__name__}: {exc}") from exc
    return data


def parse_openapi(text: str) -> list[dict[str, Any]]:
    """Endpoint drafts ``{name, path, method, params, responses}`` in the spec's order."""
    spec = SchemaPath.from_dict(load_spec(text))
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
            required |= {str(r) for r in (part / "required").read_value()}  # values, not paths
        if "properties" in part:
            names += [str(k) for k in (part / "properties").str_keys() if str(k) not in names]
    return [{"name": n, "in": "body", "required": n in required, "description": None}
            for n in names]


def _responses(op: SchemaPath) -> dict[str, str]:
    if "responses" not in op:
        return {}
    responses = op / "responses"
    return {str(code): _str(responses / code, "description") or "" for code in responses.str_keys()}

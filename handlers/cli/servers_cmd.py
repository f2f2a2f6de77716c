"""``chatflow servers …``: the /integration-servers routes from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from chatflow.runtime.errors import ConfigurationError

from ..registry.models import EndpointCreate, EndpointTest, ServerCreate, ServerPatch
from .common import pairs, subcommands
from .registry_cmd import Ops, model, read_json, run_ops


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("servers", help="integration servers and their endpoints")
    cmd = subcommands(p, "servers_command")

    cmd("list", "servers with endpoints and usage", cmd_list)
    cmd("show", "one server", cmd_show).add_argument("id")
    for name, handler in (("create", cmd_create), ("update", cmd_update)):
        c = cmd(name, f"{name} a server", handler)
        if name == "update":
            c.add_argument("id")
        else:
            c.add_argument("--id")
        c.add_argument("--name")
        c.add_argument("--base-url")
        c.add_argument("--header", action="append", default=[], metavar="NAME=VALUE")
        c.add_argument("--secret-header", action="append", default=[], metavar="NAME=VALUE",
                       help="stored encrypted, never shown again")
    cmd("delete", "remove a server", cmd_delete).add_argument("id")
    cmd("endpoints", "a server's endpoints", cmd_endpoints).add_argument("id")
    c = cmd("add-endpoint", "create an endpoint from a JSON file", cmd_add_endpoint)
    c.add_argument("id")
    c.add_argument("file", help="an endpoint JSON: name, path, method, params... ('-': stdin)")
    c = cmd("delete-endpoint", "remove an endpoint", cmd_delete_endpoint)
    c.add_argument("id")
    c.add_argument("endpoint")
    c = cmd("import-openapi", "import an OpenAPI 3.0/3.1 spec (YAML or JSON)", cmd_import)
    c.add_argument("id")
    c.add_argument("spec", help="path of the spec")
    c = cmd("test", "run a saved endpoint against the real API", cmd_test)
    c.add_argument("id")
    c.add_argument("endpoint")
    c.add_argument("--param", action="append", default=[], metavar="IN:NAME=VALUE",
                   help="a param mapping, e.g. route:petId=7, query:limit=5, body:name=Rex")
    c.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")


def _headers(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    plain = [{"name": k, "value": v} for k, v in pairs(args.header, "--header").items()]
    secret = [{"name": k, "value": v, "secret": True}
              for k, v in pairs(args.secret_header, "--secret-header").items()]
    return plain + secret if plain or secret else None


def cmd_list(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.servers.list_all())


def cmd_show(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.servers.view(args.id))


def cmd_create(args: argparse.Namespace) -> int:
    body = model(ServerCreate, {"id": args.id, "name": args.name, "baseUrl": args.base_url,
                                "headers": _headers(args)})
    return run_ops(args, lambda ops: ops.servers.create(body))


def cmd_update(args: argparse.Namespace) -> int:
    body = model(ServerPatch, {"name": args.name, "baseUrl": args.base_url,
                               "headers": _headers(args)})
    return run_ops(args, lambda ops: ops.servers.update(args.id, body))


def cmd_delete(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.servers.delete(args.id))


def cmd_endpoints(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.servers.endpoints(args.id))


def cmd_add_endpoint(args: argparse.Namespace) -> int:
    body = model(EndpointCreate, read_json(args.file) or {})
    return run_ops(args, lambda ops: ops.servers.add_endpoint(args.id, body))


def cmd_delete_endpoint(args: argparse.Namespace) -> int:
    return run_ops(args, lambda ops: ops.servers.delete_endpoint(args.id, args.endpoint))


def cmd_import(args: argparse.Namespace) -> int:
    try:
        text = Path(args.spec).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"{args.spec}: {exc.strerror}") from exc

    async def go(ops: Ops) -> dict[str, Any]:
        # Parsing and validating a large spec takes a while: say what is happening.
        print(f"importing {args.spec} ({len(text) // 1024} KiB) into server {args.id}…",
              file=sys.stderr, flush=True)
        endpoints = await ops.servers.import_openapi(args.id, text)
        print(f"imported {len(endpoints)} endpoints", file=sys.stderr, flush=True)
        return {"serverId": args.id, "imported": len(endpoints),
                "endpoints": [{"id": e["id"], "name": e["name"], "method": e["method"],
                               "path": e["path"]} for e in endpoints]}
    return run_ops(args, go)


def cmd_test(args: argparse.Namespace) -> int:
    mappings = []
    for item in args.param:
        where, sep, rest = item.partition(":")
        name, sep2, value = rest.partition("=")
        if not (sep and sep2 and name):
            raise ConfigurationError(f"--param {item!r}: expected IN:NAME=VALUE")
        mappings.append({"name": name, "in": where, "value": value})
    body = model(EndpointTest, {"paramMappings": mappings, "variables": pairs(args.var, "--var")})
    return run_ops(args, lambda ops: ops.servers.test(args.id, args.endpoint, body))

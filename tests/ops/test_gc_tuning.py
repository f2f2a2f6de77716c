"""Worker processes tune Python's cyclic GC after start-up (Settings.gc_threshold)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from chatflow.handlers.operations.serving import tune_gc
default = gc.get_threshold()
tune_gc({threshold})
print(default[0], gc.get_threshold()[0], gc.get_freeze_count() > 0)
"""


def probe(threshold: int) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(threshold=threshold)],
                         capture_output=True, text=True, check=True, cwd=".")
    return out.stdout.split()


def test_tune_gc_raises_the_young_threshold_and_freezes_start_up_objects() -> None:
    assert probe(10_000) == ["700", "10000", "True"]


def test_a_zero_threshold_leaves_python_s_collector_alone() -> None:
    assert probe(0) == ["700", "700", "False"]

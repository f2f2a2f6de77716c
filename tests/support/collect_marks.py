"""A pytest plugin for tests/test_documented_commands.py: after collection, writes each test's
id, whether it is marked slow, and its keywords to the file named by CHATFLOW_COLLECT_MARKS."""

from __future__ import annotations

import json
import os

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("CHATFLOW_COLLECT_MARKS")
    if not target:
        return
    rows = [{"id": item.nodeid, "slow": item.get_closest_marker("slow") is not None,
             "keywords": sorted(str(k) for k in item.keywords)} for item in session.items]
    with open(target, "w", encoding="utf-8") as out:
        json.dump(rows, out)

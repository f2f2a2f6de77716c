"""The start-up warning of ``chatflow api``/``worker``/``up`` about a missing encryption key:
only when neither CHATFLOW_ENCRYPTION_KEY nor CHATFLOW_ENCRYPTION_KEYS gives one."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from chatflow.handlers.cli.common import warn_without_encryption_key
from chatflow.handlers.settings import Settings

KEY = "ab" * 32


@pytest.fixture(autouse=True)
def no_keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHATFLOW_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("CHATFLOW_ENCRYPTION_KEYS", raising=False)


def warnings(settings: Settings) -> list[str]:
    with capture_logs() as logs:
        warn_without_encryption_key(settings)
    return [str(e["event"]) for e in logs if e["log_level"] == "warning"]


@pytest.mark.parametrize("given", [{"encryption_keys": f"{KEY},{'cd' * 32}"},
                                   {"encryption_key": KEY}], ids=["KEYS", "KEY"])
def test_either_variable_is_a_key(given: dict[str, str]) -> None:
    assert warnings(Settings(**given)) == []


def test_without_either_the_warning_names_both() -> None:
    [text] = warnings(Settings())
    assert "CHATFLOW_ENCRYPTION_KEY " in text and "CHATFLOW_ENCRYPTION_KEYS" in text

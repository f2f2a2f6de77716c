"""The encryption keys a process starts with: the warning of ``chatflow api``/``worker``/``up``
about a missing key comes only when neither CHATFLOW_ENCRYPTION_KEY nor CHATFLOW_ENCRYPTION_KEYS
gives one, and ``chatflow up`` adds its data dir's key file only when neither is set (beside
KEYS it would be an older key no rotation could remove)."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from chatflow.handlers.cli.common import warn_without_encryption_key
from chatflow.handlers.cli.run_cmd import up_encryption_key
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


def test_up_leaves_its_key_file_out_when_keys_are_listed(tmp_path: Path) -> None:
    own = tmp_path / "encryption.key"
    own.write_text("ef" * 32 + "\n")
    listed = Settings(encryption_keys=KEY)
    settings, key_file = up_encryption_key(listed, tmp_path)
    assert key_file is None and settings.encryption_key_list() == [KEY]


def test_up_uses_its_key_file_when_no_key_is_set(tmp_path: Path) -> None:
    settings, key_file = up_encryption_key(Settings(), tmp_path)
    assert key_file == tmp_path / "encryption.key"
    assert settings.encryption_key_list() == [key_file.read_text().strip()]

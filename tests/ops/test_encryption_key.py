"""The encryption key `chatflow up` keeps, and the one warning `chatflow api` and
`chatflow worker` give when none is configured."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chatflow.handlers.embedded import read_or_make_encryption_key
from chatflow.handlers.registry.crypto import SecretBox
from chatflow.runtime.errors import ConfigurationError

CHATFLOW = str(Path(sys.executable).with_name("chatflow"))


def test_the_key_is_made_once_kept_private_and_read_again(tmp_path: Path) -> None:
    key, path = read_or_make_encryption_key(tmp_path / "data")
    assert path == tmp_path / "data" / "encryption.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again, _ = read_or_make_encryption_key(tmp_path / "data")
    assert again == key
    box = SecretBox(key)  # the registry takes it as CHATFLOW_ENCRYPTION_KEY
    assert box.decrypt(box.encrypt("s3cr3t")) == "s3cr3t"


def test_a_damaged_key_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "encryption.key").write_text("not-hex\n")
    with pytest.raises(ConfigurationError, match=r"encryption\.key does not hold an encryption key"):
        read_or_make_encryption_key(tmp_path)


def start_without_key(*command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "CHATFLOW_ENCRYPTION_KEY")}
    env["CHATFLOW_LOG_FORMAT"] = "json"
    # Nothing listens on port 1: the command warns, then stops at the unreachable Valkey.
    return subprocess.run([CHATFLOW, *command, "--redis-url", "redis://127.0.0.1:1/0"],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [("api", "--port", "0"), ("worker",)])
def test_a_start_without_a_key_says_once_how_to_set_one(command: tuple[str, ...]) -> None:
    done = start_without_key(*command)
    assert done.returncode == 3, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "CHATFLOW_ENCRYPTION_KEY" in line]
    assert len(warnings) == 1
    assert "64 hex characters" in warnings[0] and "openssl rand -hex 32" in warnings[0]

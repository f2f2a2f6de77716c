"""The encryption key `chatflow up` keeps, and the one warning `chatflow api` and
`chatflow worker` give when none is configured."""

from __future__ import annotations

import os
import queue
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from chatflow.handlers.operations.embedded import read_or_make_encryption_key
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


def first_lines_without_key(redis_url: str, prefix: str, *command: str,
                            until: str) -> list[str]:
    """stderr of `chatflow COMMAND` started with no key, up to the line containing ``until``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "CHATFLOW_ENCRYPTION_KEY")}
    env.update(CHATFLOW_LOG_FORMAT="json", CHATFLOW_METRICS_PORT="0", CHATFLOW_PREFIX=prefix)
    proc = subprocess.Popen([CHATFLOW, *command, "--redis-url", redis_url], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr or []],
                     daemon=True).start()
    seen: list[str] = []
    try:
        while not seen or until not in seen[-1]:
            try:
                seen.append(lines.get(timeout=90))
            except queue.Empty:
                pytest.fail(f"no {until!r} within 90 s: {''.join(seen[-10:])}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return seen


@pytest.mark.parametrize(("command", "until"), [
    (("api", "--port", "0"), "API on http://"), (("worker",), "worker started")])
def test_a_start_without_a_key_says_once_how_to_set_one(
        redis_url: str, prefix: str, command: tuple[str, ...], until: str) -> None:
    seen = first_lines_without_key(redis_url, prefix, *command, until=until)
    warnings = [line for line in seen if "CHATFLOW_ENCRYPTION_KEY" in line]
    assert len(warnings) == 1, seen
    assert "64 hex characters" in warnings[0] and "openssl rand -hex 32" in warnings[0]

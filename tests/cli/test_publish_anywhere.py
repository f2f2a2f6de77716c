"""`chatflow publish` names a shipped example from any folder, not only inside a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHATFLOW = str(Path(sys.executable).with_name("chatflow"))


def publish(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return subprocess.run([CHATFLOW, "publish", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_shipped_example_is_checked_by_name_from_an_empty_folder(tmp_path: Path) -> None:
    done = publish(tmp_path, "greeting", "--check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "greeting: valid"


def test_the_readme_path_of_an_example_falls_back_to_the_installed_one(tmp_path: Path) -> None:
    done = publish(tmp_path, "examples/greeting.json", "--check")
    assert done.returncode == 0, done.stderr
    assert "using the shipped example greeting" in done.stderr


def test_a_file_of_that_name_in_the_folder_is_read_instead_of_the_example(tmp_path: Path) -> None:
    (tmp_path / "greeting.json").write_text('{"blocks": {}}')
    done = publish(tmp_path, "greeting.json", "--check")
    assert done.returncode == 1 and "shipped example" not in done.stderr


def test_a_name_that_is_neither_a_file_nor_an_example_lists_the_examples(tmp_path: Path) -> None:
    done = publish(tmp_path, "no-such-tool", "--check")
    assert done.returncode == 1
    assert "No such file or directory" in done.stderr
    assert "cep_lookup, delivery_quote, greeting, shipping_quote" in done.stderr

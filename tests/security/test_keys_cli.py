"""``chatflow keys create|list|revoke`` and the admin key ``chatflow up`` keeps."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from chatflow.handlers.cli import main
from chatflow.handlers.cli.run_cmd import announce_admin_key
from chatflow.handlers.controlplane.apikeys import verify_token
from chatflow.handlers.keys import Keys
from chatflow.handlers.redis_client import make_client
from chatflow.handlers.settings import Settings


def check(redis_url: str, prefix: str, token: str) -> tuple[str | None, str]:
    """``(workspace/role of the live key, refusal reason)`` as the API would see it."""
    async def go() -> tuple[str | None, str]:
        client = make_client(redis_url)
        try:
            key, reason = await verify_token(client, Keys(prefix), token)
        finally:
            await client.aclose()
        return (f"{key.workspace}/{key.role}" if key else None), reason
    return asyncio.run(go())


def run(capsys: pytest.CaptureFixture[str], redis_url: str, *argv: str, code: int = 0) -> str:
    capsys.readouterr()
    assert main([*argv, "--redis-url", redis_url]) == code
    out, err = capsys.readouterr()
    return out if code == 0 else err


def test_keys_create_list_and_revoke_from_the_shell(
        redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    out = run(capsys, redis_url, "keys", "create", "--workspace", "shop", "--role", "editor",
              "--name", "ci", "--expires-in", "30")
    token = out.strip().splitlines()[-1]
    assert token.startswith("cfk_") and " " not in token
    assert check(redis_url, prefix, token) == ("shop/editor", "")
    listing = run(capsys, redis_url, "keys", "list")
    key_id = token.split("_")[1]
    row = next(line for line in listing.splitlines() if line.startswith(key_id))
    assert row.split()[1:4] == ["ci", "shop", "editor"] and row.split()[-1] == "active"
    assert token.split("_", 2)[2] not in listing
    assert key_id not in run(capsys, redis_url, "keys", "list", "--workspace", "default")
    assert f"revoked key {key_id}" in run(capsys, redis_url, "keys", "revoke", key_id)
    assert check(redis_url, prefix, token) == (None, "this API key was revoked")
    assert run(capsys, redis_url, "keys", "list").splitlines()[-1].split()[-1] == "revoked"


def test_keys_create_says_on_stderr_that_it_makes_a_new_workspace_naming_the_others(
        redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32: `--workspace defualt` quietly made a workspace. It still does (SPEC), aloud."""
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    run(capsys, redis_url, "keys", "create", "--workspace", "shop", "--role", "admin")
    capsys.readouterr()
    assert main(["keys", "create", "--workspace", "defualt", "--role", "admin",
                 "--redis-url", redis_url]) == 0
    out, err = capsys.readouterr()
    assert err.strip() == ("workspace 'defualt' does not exist: creating it (existing "
                           "workspaces: default, shop); did you mean 'default'?")
    token = out.strip().splitlines()[-1]
    assert check(redis_url, prefix, token) == ("defualt/admin", "")
    assert main(["keys", "create", "--workspace", "shop", "--role", "viewer",
                 "--redis-url", redis_url]) == 0
    assert capsys.readouterr().err == ""  # an existing workspace: nothing to say


def test_keys_create_refuses_a_bad_workspace_role_or_expiry(
        redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CHATFLOW_PREFIX", prefix)
    err = run(capsys, redis_url, "keys", "create", "--workspace", "Bad_WS", "--role", "admin",
              code=2)
    assert "[a-z0-9-]{1,40}" in err
    err = run(capsys, redis_url, "keys", "create", "--workspace", "ok", "--role", "admin",
              "--expires-in", "-1", code=2)
    assert "expires-in" in err
    assert "no API key 'nope'" in run(capsys, redis_url, "keys", "revoke", "nope", code=2)


def test_up_makes_an_admin_key_once_keeps_it_private_and_reuses_it(
        redis_url: str, prefix: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(redis_url=redis_url, prefix=prefix, api_port=8123)
    announce_admin_key(settings, redis_url, tmp_path, None)
    err = capsys.readouterr().err
    path = tmp_path / "admin-api-key"
    token = path.read_text().strip()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"new admin API key of workspace default (kept in {path}, mode 0600)" in err
    assert token in err
    assert f'curl -H "Authorization: Bearer $(cat {path})" http://127.0.0.1:8123/api/tools' in err
    assert check(redis_url, prefix, token) == ("default/admin", "")
    announce_admin_key(settings, redis_url, tmp_path, None)
    assert "existing admin API key" in capsys.readouterr().err
    assert path.read_text().strip() == token
    # A key that stopped working (here: a fresh Valkey prefix) is replaced by a new one,
    # and a file someone widened is narrowed again.
    path.chmod(0o644)
    announce_admin_key(settings.model_copy(update={"prefix": prefix + "fresh:"}), redis_url,
                       tmp_path, None)
    assert "new admin API key" in capsys.readouterr().err
    assert path.read_text().strip() != token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_up_makes_no_key_when_the_api_is_not_on_loopback(
        redis_url: str, prefix: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(redis_url=redis_url, prefix=prefix, api_host="0.0.0.0")
    announce_admin_key(settings, redis_url, tmp_path, None)
    assert "chatflow keys create" in capsys.readouterr().err
    assert not (tmp_path / "admin-api-key").exists()

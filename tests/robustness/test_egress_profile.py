"""CHATFLOW_EGRESS_PROFILE (runtime/egress.py): ``production`` keeps loopback, private and
link-local addresses out of reach unless the allow list names them; ``development`` is the
default and keeps today's behaviour; the long-running commands say at start which is in force."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import threading

import pytest

from chatflow.handlers.cli.common import announce_egress
from chatflow.handlers.operations.embedded import free_port
from chatflow.handlers.settings import Settings
from chatflow.runtime.egress import EgressDenied, EgressPolicy
from chatflow.runtime.errors import ToolFailure
from tests.support.http import LoopbackServer

GUARDED = ["127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
           "0.0.0.0", "169.254.10.10", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
           "fd00::1", "fc00::1", "fe80::1", "64:ff9b::a00:1"]


def production(allow: str = "") -> EgressPolicy:
    return EgressPolicy.parse(allow, "default", "production")


@pytest.mark.parametrize("address", GUARDED)
def test_the_production_profile_denies_loopback_private_and_link_local_addresses(
        address: str) -> None:
    with pytest.raises(EgressDenied, match="denie"):  # by the profile or the default list
        production().check("svc.internal", [ipaddress.ip_address(address)])


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "::1", "fd00::1", "100.64.0.1"])
def test_the_development_profile_allows_them_as_before(address: str) -> None:
    EgressPolicy.parse(profile="development").check("svc.internal", [ipaddress.ip_address(address)])


@pytest.mark.parametrize(("allow", "address"), [
    ("127.0.0.1", "127.0.0.1"), ("10.0.0.0/8", "10.1.2.3"), ("::1", "::1"),
    ("svc.internal", "10.1.2.3"), (".internal", "192.168.1.1")])
def test_the_allow_list_opens_a_guarded_address_by_cidr_or_name(allow: str, address: str) -> None:
    production(allow).check("svc.internal", [ipaddress.ip_address(address)])


def test_an_allowed_address_opens_only_itself() -> None:
    with pytest.raises(EgressDenied, match=r"10\.0\.0\.6"):
        production("10.0.0.5").check("svc.internal", [ipaddress.ip_address("10.0.0.6")])


def test_public_addresses_pass_the_production_profile() -> None:
    production().check("example.com", [ipaddress.ip_address("93.184.216.34"),
                                       ipaddress.ip_address("2606:2800:220:1::1")])


def test_the_deny_list_still_wins_over_the_allow_list() -> None:
    with pytest.raises(EgressDenied, match=r"169\.254\.0\.0/16"):
        production("169.254.169.254").check("x", [ipaddress.ip_address("169.254.169.254")])


def test_an_unknown_profile_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="staging"):
        EgressPolicy.parse(profile="staging")
    with pytest.raises(ValueError, match="egress_profile"):
        Settings(egress_profile="staging")  # type: ignore[arg-type]


async def test_production_keeps_a_loopback_server_out_of_reach_until_it_is_allowed(
        http_server: LoopbackServer) -> None:
    http_server.route("GET", "/metrics", {"secret": "internals"})
    url = http_server.base.replace("127.0.0.1", "localhost") + "/metrics"
    denied = Settings(egress_profile="production").outbound()
    allowed = Settings(egress_profile="production", egress_allow="127.0.0.1").outbound()
    async with denied, allowed:
        for target in (url, http_server.base + "/metrics"):  # a name and a literal
            with pytest.raises(ToolFailure) as refused:
                await denied.send("GET", target, headers={}, content=None, timeout_s=10)
            assert refused.value.code == "egress_denied"
            assert "CHATFLOW_EGRESS_ALLOW" in refused.value.message
        assert http_server.requests == []
        status, _body, _type = await allowed.send("GET", url, headers={}, content=None,
                                                  timeout_s=10)
    assert status == 200 and [r.path for r in http_server.requests] == ["/metrics"]


def test_worker_api_and_up_name_the_egress_profile_at_start(redis_url: str) -> None:
    profile = "production"
    env = {**os.environ, "REDIS_URL": redis_url, "CHATFLOW_EGRESS_PROFILE": profile,
           "CHATFLOW_METRICS_PORT": "0", "CHATFLOW_PREFIX": f"profile-{profile}"}
    commands = {"worker": ["worker"], "api": ["api", "--port", str(free_port())],
                "up": ["up", "--no-api", "--no-examples"]}
    procs = {name: subprocess.Popen([sys.executable, "-m", "chatflow.handlers.cli", *argv],
                                    env=env, text=True, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
             for name, argv in commands.items()}
    try:
        for name, proc in procs.items():
            assert _line_starting(proc, "egress profile: ").startswith(
                f"egress profile: {profile} ("), name
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(timeout=30)


def test_the_start_line_of_the_default_profile_says_how_to_close_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    announce_egress(Settings())
    line = capsys.readouterr().err.strip()
    assert line.startswith("egress profile: development (")
    assert "CHATFLOW_EGRESS_PROFILE=production" in line


def _line_starting(proc: subprocess.Popen[str], prefix: str, timeout_s: float = 120) -> str:
    """The first stderr line that starts with ``prefix``, read on a thread with a timeout."""
    found: list[str] = []
    seen: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith(prefix):
                found.append(line.strip())
                return
            seen.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    assert found, f"no line starting {prefix!r}; stderr so far: {''.join(seen)[-2000:]}"
    return found[0]

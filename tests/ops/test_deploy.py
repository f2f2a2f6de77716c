"""Every file in deploy/ is checked: promtool for Prometheus, parsers and shape checks for the
rest (compose, Kubernetes, Grafana, Valkey, systemd)."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def promtool(*args: str) -> str:
    binary = shutil.which("promtool")
    if not binary:  # an outside tool: CI installs and requires it, a fresh clone may lack it
        if os.environ.get("CHATFLOW_CI"):
            pytest.fail("promtool is missing: .ci/run installs Debian's prometheus package")
        pytest.skip("promtool is missing: apt-get install prometheus (or put promtool on PATH)")
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def k8s_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def test_promtool_accepts_the_prometheus_config() -> None:
    assert "SUCCESS" in promtool("check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))


def test_promtool_accepts_the_alert_rules_and_their_unit_tests_pass() -> None:
    assert "SUCCESS: 5 rules found" in promtool("check", "rules",
                                                str(DEPLOY / "prometheus" / "alerts.yml"))
    assert "SUCCESS" in promtool("test", "rules", str(DEPLOY / "prometheus" / "alerts.test.yml"))


def test_the_alerts_cover_the_failures_operators_must_hear_about() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    names = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert names == {"ChatflowNoWorkers", "ChatflowConsumerGroupStuck", "ChatflowPendingGrowing",
                     "ChatflowErrorRateRising", "ChatflowDeadLetters"}


def test_promtool_accepts_the_prometheus_config_of_the_kubernetes_manifests(
        tmp_path: Path) -> None:
    (cm,) = [d for d in k8s_documents()
             if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "prometheus-config"]
    config = yaml.safe_load(cm["data"]["prometheus.yml"])
    shutil.copy(DEPLOY / "prometheus" / "alerts.yml", tmp_path / "alerts.yml")
    config["rule_files"] = ["alerts.yml"]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert "SUCCESS" in promtool("check", "config", str(tmp_path / "prometheus.yml"))


def test_compose_runs_valkey_workers_the_api_prometheus_and_grafana() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"valkey", "worker", "api", "prometheus", "grafana"}
    for path in ("./valkey/valkey.conf", "./prometheus/prometheus.yml", "./prometheus/alerts.yml",
                 "./grafana/provisioning", "./grafana/dashboards"):
        assert (DEPLOY / path).exists(), path
    assert services["worker"]["environment"]["REDIS_URL"] == "redis://valkey:6379/0"
    assert "--metrics-port" in services["worker"]["command"]
    assert (DEPLOY / services["worker"]["build"]["dockerfile"].removeprefix("deploy/")).exists()


def test_kubernetes_workers_are_a_deployment_scaled_by_pending_entries() -> None:
    docs = k8s_documents()
    for doc in docs:
        assert {"apiVersion", "kind", "metadata"} <= set(doc), doc
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {("Deployment", "chatflow-worker"), ("Deployment", "chatflow-api"),
            ("StatefulSet", "valkey"), ("Deployment", "prometheus"), ("Deployment", "grafana"),
            ("ScaledObject", "chatflow-worker")} <= kinds
    (scaled,) = [d for d in docs if d["kind"] == "ScaledObject"]
    assert scaled["spec"]["scaleTargetRef"]["name"] == "chatflow-worker"
    triggers = scaled["spec"]["triggers"]
    assert {t["type"] for t in triggers} == {"redis-streams"}
    assert all(int(t["metadata"]["pendingEntriesCount"]) > 0 for t in triggers)
    assert "stream:tool-commands" in {t["metadata"]["stream"] for t in triggers}
    (worker,) = [d for d in docs if d["kind"] == "Deployment"
                 and d["metadata"]["name"] == "chatflow-worker"]
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health/live"


def test_the_grafana_dashboard_shows_the_ops_view() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "chatflow.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    for needle in ("chatflow_tool_executions_total", "histogram_quantile",
                   "chatflow_errors_total", "chatflow_stream_lag", "topk"):
        assert needle in exprs, needle
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for path in (DEPLOY / "grafana" / "provisioning").rglob("*.yml"):
        assert yaml.safe_load(path.read_text())["apiVersion"] == 1


def test_valkey_keeps_an_append_only_file_synced_every_second() -> None:
    settings = {}
    for line in (DEPLOY / "valkey" / "valkey.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            settings[key] = value
    assert settings["appendonly"] == "yes" and settings["appendfsync"] == "everysec"
    assert settings["maxmemory-policy"] == "noeviction"


def test_the_systemd_unit_runs_a_worker_with_its_metrics_port() -> None:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "systemd" / "chatflow-worker@.service")
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    assert "chatflow worker --metrics-port" in unit["Service"]["ExecStart"]
    assert unit["Service"]["Restart"] == "always"
    assert unit["Install"]["WantedBy"] == "multi-user.target"

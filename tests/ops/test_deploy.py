"""Every file in deploy/ is checked: promtool for Prometheus, parsers and shape checks for the
rest (compose, Kubernetes, Grafana, Valkey, systemd)."""

from __future__ import annotations

import configparser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from chatflow.handlers.operations.embedded import find_server_binary, free_port

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"


def promtool(*args: str) -> str:
    """Run promtool; skip when it is missing here, but never in CI (CI=true installs it)."""
    binary = shutil.which("promtool")
    if not binary:  # an outside tool: CI installs and requires it, a fresh clone may lack it
        if os.environ.get("CHATFLOW_CI") or os.environ.get("CI") == "true":
            pytest.fail("promtool is missing: .ci/run installs Debian's prometheus package")
        pytest.skip("promtool is missing: apt-get install prometheus (or put promtool on PATH)")
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def k8s_files() -> list[Path]:
    return sorted((DEPLOY / "k8s").glob("*.yaml"))


def k8s_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in k8s_files():
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def alert_names() -> set[str]:
    rules = yaml.safe_load(ALERTS.read_text())
    return {r["alert"] for g in rules["groups"] for r in g["rules"]}


def conf(path: Path) -> dict[str, str]:
    settings: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            settings[key] = value
    return settings


def test_promtool_accepts_the_prometheus_config() -> None:
    assert "SUCCESS" in promtool("check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))


def test_promtool_accepts_the_alert_rules_and_their_unit_tests_pass() -> None:
    assert f"SUCCESS: {len(alert_names())} rules found" in promtool("check", "rules", str(ALERTS))
    assert "SUCCESS" in promtool("test", "rules", str(DEPLOY / "prometheus" / "alerts.test.yml"))


def test_every_alert_has_a_unit_test_that_makes_it_fire() -> None:
    tests = yaml.safe_load((DEPLOY / "prometheus" / "alerts.test.yml").read_text())["tests"]
    fired = {case["alertname"] for t in tests for case in t.get("alert_rule_test", [])
             if case.get("exp_alerts")}
    assert fired == alert_names()


def test_the_alerts_cover_the_failures_operators_must_hear_about() -> None:
    assert alert_names() == {
        "ChatflowNoWorkers", "ChatflowWorkersDown", "ChatflowBacklog",
        "ChatflowConsumerGroupStuck", "ChatflowPendingGrowing", "ChatflowErrorRateHigh",
        "ChatflowTimeouts", "ChatflowLatencyObjective", "ChatflowDeadLetters",
        "ChatflowCircuitOpen",
        "ChatflowWorkersNotReady", "ChatflowExecutionsTrimmedUnread", "ValkeyDown",
        "ValkeyMemoryNearMax", "ValkeyRejectingWrites"}
    rules = {r["alert"]: r for g in yaml.safe_load(ALERTS.read_text())["groups"]
             for r in g["rules"]}
    assert "chatflow_stream_lag" in rules["ChatflowBacklog"]["expr"]
    # a comparison with the past stops firing once the outage is older than the offset
    assert "offset" not in rules["ChatflowErrorRateHigh"]["expr"]


def test_both_prometheus_setups_send_alerts_to_alertmanager_which_routes_them() -> None:
    (cm,) = [d for d in k8s_documents()
             if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "prometheus-config"]
    for config in (yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text()),
                   yaml.safe_load(cm["data"]["prometheus.yml"])):
        targets = [t for am in config["alerting"]["alertmanagers"]
                   for sc in am["static_configs"] for t in sc["targets"]]
        assert targets == ["alertmanager:9093"]
    am = yaml.safe_load((DEPLOY / "alertmanager" / "alertmanager.yml").read_text())
    receivers = {r["name"] for r in am["receivers"]}
    routed = {am["route"]["receiver"]} | {r["receiver"] for r in am["route"]["routes"]}
    assert routed <= receivers and len(receivers) >= 2
    assert any('severity="critical"' in m for r in am["route"]["routes"] for m in r["matchers"])
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert "alertmanager" in compose["services"]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in k8s_documents()}
    assert {("Deployment", "alertmanager"), ("Service", "alertmanager")} <= kinds


def test_promtool_accepts_the_prometheus_config_of_the_kubernetes_manifests(
        tmp_path: Path) -> None:
    (cm,) = [d for d in k8s_documents()
             if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "prometheus-config"]
    config = yaml.safe_load(cm["data"]["prometheus.yml"])
    shutil.copy(ALERTS, tmp_path / "alerts.yml")
    config["rule_files"] = ["alerts.yml"]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert "SUCCESS" in promtool("check", "config", str(tmp_path / "prometheus.yml"))


def test_compose_runs_valkey_workers_the_api_prometheus_alertmanager_and_grafana() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"valkey", "valkey-exporter", "worker", "api", "prometheus",
                             "alertmanager", "grafana", "jaeger"}
    for path in ("./valkey/valkey.conf", "./prometheus/prometheus.yml", "./prometheus/alerts.yml",
                 "./alertmanager/alertmanager.yml", "./grafana/provisioning",
                 "./grafana/dashboards"):
        assert (DEPLOY / path).exists(), path
    assert "--metrics-port" in services["worker"]["command"]
    assert (DEPLOY / services["worker"]["build"]["dockerfile"].removeprefix("deploy/")).exists()


def test_compose_publishes_services_without_a_login_on_loopback_only() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for name in ("prometheus", "alertmanager", "jaeger"):
        assert all(str(p).startswith("127.0.0.1:") for p in services[name]["ports"]), name
    grafana = services["grafana"]["environment"]
    # a default admin/admin Grafana is the first thing a scanner tries
    assert grafana["GF_SECURITY_ADMIN_PASSWORD"].startswith("${GRAFANA_ADMIN_PASSWORD:?")
    assert grafana["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert grafana["GF_USERS_ALLOW_SIGN_UP"] == "false"


def test_compose_keeps_valkey_internal_and_behind_a_password_from_the_environment() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    valkey = compose["services"]["valkey"]
    assert "ports" not in valkey, "6379 must not be published"
    assert valkey["networks"] == ["backend"] and compose["networks"]["backend"]["internal"]
    assert valkey["environment"]["VALKEY_PASSWORD"].startswith("${VALKEY_PASSWORD:?")
    assert "requirepass" in " ".join(valkey["command"]) and "--include" in valkey["command"][0]
    for name in ("worker", "api"):
        url = compose["services"][name]["environment"]["REDIS_URL"]
        assert url.startswith("redis://default:${VALKEY_PASSWORD:?")
        assert url.endswith("@valkey:6379/0")
        assert "backend" in compose["services"][name]["networks"]


def test_kubernetes_applies_alone_every_referenced_configmap_and_secret_is_defined() -> None:
    docs = k8s_documents()
    for doc in docs:
        assert {"apiVersion", "kind", "metadata"} <= set(doc), doc
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "chatflow", doc["metadata"]
    (first, *_rest) = k8s_files()
    assert next(d["kind"] for d in yaml.safe_load_all(first.read_text())) == "Namespace"
    configmaps, secrets = references(docs)
    defined = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
    assert configmaps and configmaps <= defined, configmaps - defined
    made = {d["metadata"]["name"] for d in docs if d["kind"] == "Secret"}
    for job in (d for d in docs if d["kind"] == "Job"):
        script = " ".join(job["spec"]["template"]["spec"]["containers"][0]["args"])
        made |= {s for s in secrets if f"create secret generic {s}" in script}
    assert secrets and secrets <= made, secrets - made


def references(node: Any) -> tuple[set[str], set[str]]:
    """Names of the ConfigMaps and Secrets a manifest tree refers to."""
    configmaps: set[str] = set()
    secrets: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("configMap", "configMapRef", "configMapKeyRef") and "name" in value:
                configmaps.add(value["name"])
            elif key in ("secretRef", "secretKeyRef") and "name" in value:
                secrets.add(value["name"])
            elif key == "secret" and isinstance(value, dict) and "secretName" in value:
                secrets.add(value["secretName"])
            elif key == "secretTargetRef":
                secrets |= {ref["name"] for ref in value}
            more = references(value)
            configmaps |= more[0]
            secrets |= more[1]
    elif isinstance(node, list):
        for item in node:
            more = references(item)
            configmaps |= more[0]
            secrets |= more[1]
    return configmaps, secrets


def test_the_kubernetes_configmaps_hold_exactly_their_source_files() -> None:
    spec = importlib.util.spec_from_file_location("render", DEPLOY / "k8s" / "render_configmaps.py")
    assert spec is not None and spec.loader is not None
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    assert (DEPLOY / "k8s" / "configmaps.yaml").read_text() == render.render(), \
        "run: python deploy/k8s/render_configmaps.py"
    docs = {d["metadata"]["name"]: d for d in k8s_documents() if d["kind"] == "ConfigMap"}
    for name, files in render.SOURCES.items():
        for key, source in files.items():
            assert docs[name]["data"][key] == (DEPLOY / source).read_text()


def load_render() -> Any:
    spec = importlib.util.spec_from_file_location("render", DEPLOY / "k8s" / "render_configmaps.py")
    assert spec is not None and spec.loader is not None
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    return render


def test_keda_watches_the_step_stream_of_every_partition_the_workers_run_with() -> None:
    from chatflow.handlers.keys import Keys
    from chatflow.handlers.settings import Settings
    from chatflow.schemas.keys import COMMANDS_GROUP, STEPS_GROUP

    render = load_render()
    assert (DEPLOY / "k8s" / "workers-scaledobject.yaml").read_text() == \
        render.render_scaledobject(), "run: python deploy/k8s/render_configmaps.py"
    (env_cm,) = [d for d in k8s_documents() if d["metadata"]["name"] == "chatflow-env"]
    settings = Settings.model_validate(
        {k.removeprefix("CHATFLOW_").lower(): v for k, v in env_cm["data"].items()
         if k in ("CHATFLOW_PARTITIONS", "CHATFLOW_PREFIX")})
    keys = Keys(settings.prefix, settings.partitions)
    (scaled,) = [d for d in k8s_documents() if d["kind"] == "ScaledObject"]
    watched = {(t["metadata"]["stream"], t["metadata"]["consumerGroup"])
               for t in scaled["spec"]["triggers"]}
    assert watched == {(keys.commands, COMMANDS_GROUP)} | {
        (keys.steps(n), STEPS_GROUP) for n in range(settings.partitions)}


def test_the_rendered_scaledobject_follows_a_changed_partition_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    render = load_render()
    monkeypatch.setattr(render, "worker_env", lambda: {"CHATFLOW_PARTITIONS": "7"})
    (_auth, scaled) = list(yaml.safe_load_all(render.render_scaledobject()))
    streams = [t["metadata"]["stream"] for t in scaled["spec"]["triggers"]]
    assert streams == ["stream:tool-commands", *[f"{{cf:{n}}}:steps" for n in range(7)]]


def test_kubernetes_workers_are_scaled_by_consumer_group_lag() -> None:
    docs = k8s_documents()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {("Deployment", "chatflow-worker"), ("Deployment", "chatflow-api"),
            ("StatefulSet", "valkey"), ("Deployment", "prometheus"), ("Deployment", "grafana"),
            ("ScaledObject", "chatflow-worker")} <= kinds
    (scaled,) = [d for d in docs if d["kind"] == "ScaledObject"]
    assert scaled["spec"]["scaleTargetRef"]["name"] == "chatflow-worker"
    triggers = scaled["spec"]["triggers"]
    assert {t["type"] for t in triggers} == {"redis-streams"}
    assert all(int(t["metadata"]["lagCount"]) > 0 for t in triggers)
    assert not any("pendingEntriesCount" in t["metadata"] for t in triggers)
    assert all(t["authenticationRef"]["name"] == "chatflow-valkey" for t in triggers)
    assert "stream:tool-commands" in {t["metadata"]["stream"] for t in triggers}
    (worker,) = [d for d in docs if d["kind"] == "Deployment"
                 and d["metadata"]["name"] == "chatflow-worker"]
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health/live"


def test_kubernetes_clients_reach_valkey_with_the_password_of_a_secret() -> None:
    docs = k8s_documents()
    for name in ("chatflow-worker", "chatflow-api"):
        (deployment,) = [d for d in docs if d["kind"] == "Deployment"
                         and d["metadata"]["name"] == name]
        env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["VALKEY_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "chatflow-valkey"
        assert env["REDIS_URL"]["value"] == "redis://default:$(VALKEY_PASSWORD)@valkey:6379/0"
    (env_cm,) = [d for d in docs if d["metadata"]["name"] == "chatflow-env"]
    assert "REDIS_URL" not in env_cm["data"]


def test_the_grafana_dashboard_shows_the_ops_view() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "chatflow.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", []))
    for needle in ("chatflow_tool_executions_total", "histogram_quantile",
                   "chatflow_errors_total", "chatflow_stream_lag", "topk"):
        assert needle in exprs, needle
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for path in (DEPLOY / "grafana" / "provisioning").rglob("*.yml"):
        assert yaml.safe_load(path.read_text())["apiVersion"] == 1


def valkey_configs() -> list[tuple[str, dict[str, str]]]:
    (cm,) = [d for d in k8s_documents() if d["metadata"]["name"] == "valkey-config"]
    parsed: dict[str, str] = {}
    for line in cm["data"]["valkey.conf"].splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            parsed[key] = value
    return [(str(DEPLOY / "valkey" / "valkey.conf"), conf(DEPLOY / "valkey" / "valkey.conf")),
            ("deploy/k8s/valkey.yaml", parsed)]


def test_both_valkey_configs_keep_an_aof_bound_memory_and_stay_protected() -> None:
    for where, settings in valkey_configs():
        assert settings["appendonly"] == "yes" and settings["appendfsync"] == "everysec", where
        assert settings["maxmemory-policy"] == "noeviction", where
        assert settings["maxmemory"].endswith(("mb", "gb")), where
        assert settings["protected-mode"] == "yes", where
        assert "requirepass" not in settings, f"{where}: no password is ever committed"


def test_a_valkey_started_with_the_shipped_config_refuses_clients_without_the_password(
        tmp_path: Path) -> None:
    text = (DEPLOY / "valkey" / "valkey.conf").read_text().replace("dir /data", f"dir {tmp_path}")
    (tmp_path / "valkey.conf").write_text(text)
    (tmp_path / "auth.conf").write_text("requirepass 0123abcd\n")
    port = free_port()
    proc = subprocess.Popen([find_server_binary(), str(tmp_path / "valkey.conf"), "--port", str(port),
                             "--bind", "127.0.0.1", "--appendonly", "no",
                             "--include", str(tmp_path / "auth.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        authed = redis.Redis(port=port, password="0123abcd")
        deadline = time.monotonic() + 10
        while True:  # a foreign process with no readiness signal: poll it, bounded
            try:
                assert authed.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "valkey did not start"
                time.sleep(0.05)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, protocol=2).ping()
        assert int(authed.config_get("maxmemory")["maxmemory"]) == 1536 * 2**20
        assert authed.config_get("protected-mode")["protected-mode"] == "yes"
        authed.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_systemd_unit_runs_a_worker_with_its_metrics_port() -> None:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "systemd" / "chatflow-worker@.service")
    assert {"Unit", "Service", "Install"} <= set(unit.sections())
    assert "chatflow worker --metrics-port" in unit["Service"]["ExecStart"]
    assert unit["Service"]["Restart"] == "always"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_an_unready_worker_stays_a_prometheus_target_in_kubernetes() -> None:
    (service,) = [d for d in k8s_documents() if d["kind"] == "Service"
                  and d["metadata"]["name"] == "chatflow-worker-metrics"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True


def test_every_deployment_runs_with_the_production_egress_profile() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name in ("worker", "api"):
        assert compose["services"][name]["environment"]["CHATFLOW_EGRESS_PROFILE"] == "production"
    (env_cm,) = [d for d in k8s_documents() if d["metadata"]["name"] == "chatflow-env"]
    assert env_cm["data"]["CHATFLOW_EGRESS_PROFILE"] == "production"
    for name in ("chatflow-worker", "chatflow-api"):
        (deployment,) = [d for d in k8s_documents() if d["kind"] == "Deployment"
                         and d["metadata"]["name"] == name]
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert {"configMapRef": {"name": "chatflow-env"}} in container["envFrom"]
    unit = (DEPLOY / "systemd" / "chatflow-worker@.service").read_text().splitlines()
    assert "Environment=CHATFLOW_EGRESS_PROFILE=production" in unit


def test_valkey_is_watched_by_redis_exporter_in_compose_and_kubernetes() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    exporter = compose["services"]["valkey-exporter"]
    assert exporter["image"].startswith("oliver006/redis_exporter:v")
    assert exporter["environment"]["REDIS_ADDR"] == "redis://valkey:6379"
    assert exporter["environment"]["REDIS_PASSWORD"].startswith("${VALKEY_PASSWORD:?")
    assert "ports" not in exporter and "backend" in exporter["networks"]
    docs = k8s_documents()
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"
                     and d["metadata"]["name"] == "valkey-exporter"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == exporter["image"]
    env = {e["name"]: e for e in container["env"]}
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "chatflow-valkey"
    assert ("Service", "valkey-exporter") in {(d["kind"], d["metadata"]["name"]) for d in docs}
    (cm,) = [d for d in docs
             if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "prometheus-config"]
    for config in (yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text()),
                   yaml.safe_load(cm["data"]["prometheus.yml"])):
        (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "valkey"]
        assert job["static_configs"][0]["targets"] == ["valkey-exporter:9121"]


def test_the_grafana_dashboard_has_a_valkey_row() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "chatflow.json").read_text())
    (row,) = [p for p in dashboard["panels"] if p["type"] == "row"]
    below = [p for p in dashboard["panels"] if p["gridPos"]["y"] > row["gridPos"]["y"]]
    exprs = " ".join(t["expr"] for p in below for t in p["targets"])
    for needle in ("redis_memory_used_bytes", "redis_memory_max_bytes", "redis_connected_clients",
                   'redis_errors_total{job="valkey", err="OOM"}',
                   "redis_commands_rejected_calls_total", "redis_uptime_in_seconds"):
        assert needle in exprs, needle


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading (lower case, punctuation dropped)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_alert_links_a_runbook_section_that_exists() -> None:
    doc = DEPLOY.parent / "docs" / "operations.md"
    anchors = {github_anchor(line.lstrip("#")) for line in doc.read_text().splitlines()
               if line.startswith("#")}
    rules = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    assert len(rules) == len(alert_names()) == 15
    for rule in rules:
        url = rule["annotations"].get("runbook_url", "")
        page, _, anchor = url.partition("#")
        assert page == "docs/operations.md", rule["alert"]
        assert anchor in anchors, f"{rule['alert']}: no section #{anchor} in docs/operations.md"


def test_compose_sends_traces_to_jaeger_which_grafana_reads_and_exemplars_link_to() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for name in ("worker", "api"):
        env = services[name]["environment"]
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"
        assert "{traceId}" in env["CHATFLOW_TRACE_URL"]
    assert services["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
    assert "--enable-feature=exemplar-storage" in services["prometheus"]["command"]
    sources = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml")
                             .read_text())["datasources"]
    by_uid = {d["uid"]: d for d in sources}
    assert by_uid["jaeger"]["url"] == "http://jaeger:16686"
    assert by_uid["prometheus"]["jsonData"]["exemplarTraceIdDestinations"] == [
        {"name": "trace_id", "datasourceUid": "jaeger"}]


def test_kubernetes_workers_and_the_api_take_the_otlp_endpoint_from_a_configmap() -> None:
    docs = [d for path in sorted((DEPLOY / "k8s").glob("*.yaml"))
            for d in yaml.safe_load_all(path.read_text()) if d]
    env = next(d for d in docs if d["kind"] == "ConfigMap"
               and d["metadata"]["name"] == "chatflow-env")["data"]
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in env and "CHATFLOW_TRACE_URL" in env
    for name in ("chatflow-worker", "chatflow-api"):
        deployment = next(d for d in docs if d["kind"] in ("Deployment", "StatefulSet")
                          and d["metadata"]["name"] == name)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert {"configMapRef": {"name": "chatflow-env"}} in container["envFrom"], name

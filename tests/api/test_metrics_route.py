"""The API process serves Prometheus metrics too (deploy/prometheus.yml scrapes it)."""

from __future__ import annotations

from tests.api.support import Api


async def test_the_api_serves_prometheus_exposition_on_metrics(api: Api) -> None:
    response = await api.root.get("/metrics/")
    assert response.status_code == 200
    assert "text/plain" in response.headers["content-type"]
    assert "# TYPE" in response.text

"""Tool definitions the ops tests run: the examples (their HTTP pointed at loopback) and a few
failing or slow ones."""

from __future__ import annotations

import json
from typing import Any

from chatflow.handlers.controlplane.examples import example_tools
from tests.harness import Harness

END = {"type": "endAttendance"}


def goto(block: str) -> dict[str, str]:
    return {"type": "block", "blockId": block}


def returning(value: str) -> dict[str, Any]:
    return {"onboardingBlockId": "r", "blocks": {"r": {"type": "return", "id": "r",
                                                      "value": value}}}


def http_then_return(url: str, on_error: str = "blocking") -> dict[str, Any]:
    return {
        "onboardingBlockId": "call",
        "blocks": {
            "call": {"type": "httpCall", "id": "call", "url": url, "method": "GET",
                     "responseStatusVariable": "status", "responseBodyVariable": "body",
                     "timeoutMs": 20_000, "onError": on_error, "errorVariable": "err",
                     "outputConditions": [
                         {"id": "ok", "rules": [{"variable": "status", "operator": "equals",
                                                 "value": "200"}],
                          "target": goto("done")}],
                     "defaultOutput": goto("failed")},
            "done": {"type": "return", "id": "done", "value": "got {{body.ok}}"},
            "failed": {"type": "return", "id": "failed", "value": "failed: {{err}}"},
        },
    }


def calling(child_pt: str, on_error: str = "blocking") -> dict[str, Any]:
    return {
        "onboardingBlockId": "child",
        "blocks": {
            "child": {"type": "callTool", "id": "child", "toolId": f"t-{child_pt}",
                      "publishedToolId": child_pt, "inputVariables": [],
                      "outputVariable": "out", "onError": on_error, "errorVariable": "err",
                      "outputConditions": [], "defaultOutput": goto("r")},
            "r": {"type": "return", "id": "r", "value": "child said {{out}}"},
        },
    }


def script_failing() -> dict[str, Any]:
    return {
        "onboardingBlockId": "boom",
        "blocks": {
            "boom": {"type": "executeScript", "id": "boom", "source": "throw new Error('nope')",
                     "inputVariables": [], "outputVariable": "x", "onError": "blocking",
                     "outputConditions": [], "defaultOutput": goto("r")},
            "r": {"type": "return", "id": "r", "value": "{{x}}"},
        },
    }


def looping() -> dict[str, Any]:
    return {
        "onboardingBlockId": "a",
        "blocks": {
            "a": {"type": "executeScript", "id": "a", "source": "return 1",
                  "inputVariables": [], "outputVariable": "x", "onError": "blocking",
                  "outputConditions": [], "defaultOutput": goto("a")},
        },
    }


async def publish_examples(h: Harness, cep_url: str) -> None:
    """The example tools, with the CEP lookup's ViaCEP URL pointed at ``cep_url``."""
    for tool in example_tools():
        record = json.loads(tool.model_dump_json(by_alias=True, exclude_none=True))
        if tool.id == "pt-cep":
            record["definition"]["blocks"]["fetch"]["url"] = cep_url
        await h.client.set(h.keys.tool(tool.id), json.dumps(record))

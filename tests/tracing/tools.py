"""The tools the tracing tests run: a three-level callTool tree whose leaf calls an upstream."""

from __future__ import annotations

from typing import Any


def call(block_id: str, pt: str, then: str) -> dict[str, Any]:
    return {"type": "callTool", "id": block_id, "toolId": f"t-{pt}", "publishedToolId": pt,
            "outputVariable": "o", "inputVariables": [{"name": "n", "value": "{{n}}"}],
            "onError": "blocking", "outputConditions": [],
            "defaultOutput": {"type": "block", "blockId": then}}


def ret(block_id: str, value: str) -> dict[str, Any]:
    return {"type": "return", "id": block_id, "value": value}


def parent_tool(child: str) -> dict[str, Any]:
    """callTool(child) -> return"""
    return {"onboardingBlockId": "c", "blocks": {"c": call("c", child, "r"), "r": ret("r", "{{o}}")}}


def leaf_tool(upstream: str) -> dict[str, Any]:
    """httpCall(upstream) -> executeScript -> return: the httpCall and the script are a hop
    of their own (a block with side effects is never run ahead)."""
    return {"onboardingBlockId": "h", "blocks": {
        "h": {"type": "httpCall", "id": "h", "method": "GET",
              "url": upstream + "/echo?n={{n}}&api_key=s3cr3t",
              "headers": {"Authorization": "Bearer top-secret"},
              "responseBodyVariable": "resp", "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "s"}},
        "s": {"type": "executeScript", "id": "s", "source": "return Number(n) + 1",
              "outputVariable": "s", "inputVariables": [{"name": "n", "value": "{{resp.n}}"}],
              "onError": "blocking", "outputConditions": [],
              "defaultOutput": {"type": "block", "blockId": "r"}},
        "r": ret("r", "{{s}}")}}


# Every span of one run of the tree: three executions, two callTool visits, the leaf's
# httpCall and script, three returns.
TREE_SPANS = 10

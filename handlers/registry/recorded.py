"""A saved test case made from a recorded run: its inputs, each external block's recorded
answer as that block's mock, and its result as the expectation.

The run history keeps every block's debug detail and the variables it wrote, secrets masked
(``handlers.redaction``). So a mock is rebuilt from what the block wrote: an httpCall's or
callEndpoint's status and body (``responseBodyVariable``), a callAI's output, a fetchMedia's
base64 and MIME type, or the block's error. Whatever the history only holds masked or cut
stays so and is named in the case's ``needs``: the case says what it lacks instead of
running with a mask as a value. A run that failed makes a case that expects success (fill
in the result it should give): it fails until the tool is fixed.
"""

from __future__ import annotations

from typing import Any

from chatflow.runtime.registry.cases import MOCK_KINDS

from ..history.fork import masked_places

Run = dict[str, Any]


def _block_of(run: Run, block_id: str) -> dict[str, Any]:
    definition = ((run.get("published") or {}).get("definition") or {})
    block = (definition.get("blocks") or {}).get(block_id)
    return block if isinstance(block, dict) else {}


def _cut(value: Any) -> bool:
    return isinstance(value, dict) and value.get("truncated") is True


def mock_of(step: dict[str, Any], block: dict[str, Any]) -> dict[str, Any] | None:
    """The recorded answer of one block step, as a mock; None when the block has none."""
    kind = step.get("blockType")
    writes = step.get("writes") or {}
    error = step.get("error")
    status = (step.get("http") or {}).get("status")
    if kind in ("httpCall", "callEndpoint") and status is not None:
        body_var = block.get("responseBodyVariable")
        return {"status": status, "body": writes.get(body_var) if body_var else None,
                "headers": {}}
    if error:  # no answer at all: the block failed before one came
        return {"error": {"code": error.get("code") or "error",
                          "message": error.get("message") or ""}}
    if kind == "callAI":
        return {"result": writes.get(block.get("outputVariable", ""), "")}
    if kind == "fetchMedia":
        return {"base64": writes.get(block.get("base64Variable", ""), ""),
                "mimeType": writes.get(block.get("mimeTypeVariable", ""), "")
                or "application/octet-stream"}
    return None


def case_from_run(root: Run, runs: list[Run], name: str) -> tuple[dict[str, Any], list[str]]:
    """``(case, notes)``: the case to save, and what a person should know about it."""
    notes: list[str] = []
    needs: list[str] = []
    mocks: dict[str, Any] = {}
    for run in runs:
        depth = int(run.get("depth") or 0)
        seen: dict[str, int] = {}
        for step in run.get("steps") or []:
            block_id = step.get("blockId")
            if step.get("type") != "block" or step.get("blockType") not in MOCK_KINDS:
                continue
            key = block_id if depth == 0 else f"{run.get('toolId')}/{block_id}"
            seen[key] = seen.get(key, 0) + 1
            if key in mocks:
                continue
            mock = mock_of(step, _block_of(run, str(block_id)))
            if mock is None:
                continue
            mocks[key] = mock
            if _cut(mock.get("base64")):
                mock["base64"] = ""
                needs.append(f"mocks.{key}.base64: the recorded media was cut (the log keeps "
                             "CHATFLOW_LOG_VALUE_MAX_BYTES); put in the whole file")
            elif any(_cut(v) for v in mock.values()):
                needs.append(f"mocks.{key}: the recorded answer was cut (the log keeps "
                             "CHATFLOW_LOG_VALUE_MAX_BYTES); put in the whole answer")
            needs += [f"mocks.{key}.{p}: masked in the history; put in a value"
                      for p in masked_places(mock)]
        notes += [f"block {k} answered {n} times; its first answer is the mock"
                  for k, n in seen.items() if n > 1]
    started: dict[str, Any] = next(
        (s for s in root.get("steps") or [] if s.get("type") == "started"), {})
    detail = started.get("detail") or {}
    inputs = detail.get("inputs") or root.get("inputs") or {}
    variables = {k: v for k, v in (detail.get("variables") or {}).items() if k not in inputs}
    needs += [f"inputs.{p}: masked in the history; put in a value" for p in masked_places(inputs)]
    needs += [f"variables.{p}: masked in the history; put in a value"
              for p in masked_places(variables)]
    expect: dict[str, Any] = {}
    if root.get("status") == "ok":
        result = root.get("result") or ""
        if masked_places(result):
            needs.append("expect.result: masked in the history; put in the result")
        expect["result"] = result
    else:
        notes.append(f"the run failed ({root.get('errorCode')}): the case expects success; "
                     "set expect.result to the answer it should give")
    case = {"name": name, "inputs": inputs, "variables": variables, "mocks": mocks,
            "expect": expect, "needs": needs}
    if root.get("contactId"):
        case["contactId"] = root["contactId"]
    return case, notes

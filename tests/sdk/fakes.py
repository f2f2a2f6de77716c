"""Fake model providers: real HTTP servers on loopback that speak each wire format.

Each fake checks every request it receives (path, auth headers, body against the
vendor SDK's types) and answers from a script. A request that fails the check
gets a 400 and lands in ``failures``, so the test that caused it fails loudly.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic.types
import openai.types.chat
from google.genai import types as genai

from tests.sdk import wire

FAKE_KEY = "sk-test-0123456789abcdef"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Scripted = Reply | Callable[[Recorded], Reply]


class FakeModelServer:
    def __init__(self, check: Callable[[Recorded], None], family: str = "") -> None:
        self._check = check
        # Which provider's server-sent events to answer a streaming request with.
        self.family = family
        self._script: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.failures: list[str] = []
        # Answers every request once the script is used up (requests in any order).
        self.fallback: Callable[[Recorded], Reply] | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # A short poll interval only makes shutdown() return quickly; nothing waits on it.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def script(self, *replies: Scripted) -> None:
        with self._lock:
            self._script.extend(replies)

    def _stream_wanted(self, request: Recorded) -> bool:
        from tests.sdk.fake_streams import STREAMS

        return STREAMS[self.family][0](request)

    def _answer(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            try:
                self._check(request)
            except Exception as exc:  # any failed check must surface in the test
                self.failures.append(f"{type(exc).__name__}: {exc}")
                return Reply({"error": {"message": f"fake rejected request: {exc}"}}, 400)
            if not self._script and self.fallback is not None:
                scripted = self.fallback
            elif not self._script:
                return Reply({"error": {"message": "fake has no scripted reply left"}}, 500)
            else:
                scripted = self._script.popleft()
        return scripted(request) if callable(scripted) else scripted

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    body = json.loads(raw or b"null", parse_constant=wire.reject_non_finite)
                except ValueError as exc:
                    fake.failures.append(f"body is not valid JSON: {exc}")
                    reply = Reply({"error": {"message": f"invalid JSON: {exc}"}}, 400)
                else:
                    recorded = Recorded("POST", self.path, headers, body)
                    reply = fake._answer(recorded)
                    if reply.status < 400 and fake.family and fake._stream_wanted(recorded):
                        self._send_events(reply)
                        return
                payload = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def _send_events(self, reply: Reply) -> None:
                from tests.sdk.fake_streams import STREAMS

                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for event, data in STREAMS[fake.family][1](reply.body):
                    head = f"event: {event}\n" if event else ""
                    self.wfile.write(f"{head}data: {data}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


# ------------------------------------------------------------------ per provider

_ids = itertools.count(1)


def _signature() -> str:
    return base64.b64encode(f"signature-{next(_ids)}".encode()).decode()


@dataclass
class ToolResultSeen:
    call_id: str | None
    name: str | None
    content: Any
    is_error: bool


class ProviderFake:
    """A fake server plus the provider's reply builders and request readers."""

    family: str
    model: str
    key_variable: str
    base_variable: str

    def __init__(self, server: FakeModelServer) -> None:
        self.server = server

    @property
    def base_url(self) -> str:
        return self.server.url

    # replies
    def text(self, text: str) -> Reply:
        raise NotImplementedError

    def calls(self, *calls: tuple[str, dict[str, Any]]) -> Reply:
        raise NotImplementedError

    def empty(self, reason: str) -> Reply:
        """A reply with no text and no calls, as a blocked or truncated one comes."""
        raise NotImplementedError

    def final(self, value: Any) -> Scripted:
        """A structured final answer, as the provider's native mechanism returns it."""
        return self.text(json.dumps(value))

    # requests
    def tool_results(self, request: Recorded) -> list[ToolResultSeen]:
        raise NotImplementedError

    def answers_tools(self, request: Recorded) -> bool:
        """True when the request ends with tool results (the model's turn after calls)."""
        raise NotImplementedError

    def declared_tools(self, request: Recorded) -> list[str]:
        raise NotImplementedError


class GeminiFake(ProviderFake):
    family, model = "gemini", "gemini-2.5-flash"
    key_variable, base_variable = "GEMINI_API_KEY", "GEMINI_BASE_URL"

    @staticmethod
    def check(request: Recorded) -> None:
        assert request.path in (
            "/v1beta/models/gemini-2.5-flash:generateContent",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ), request.path
        assert request.headers.get("x-goog-api-key") == FAKE_KEY
        assert "key=" not in request.path
        wire.check_gemini_request(request.body)

    @staticmethod
    def _reply(parts: list[dict[str, Any]], finish: str = "STOP") -> Reply:
        body = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-2.5-flash",
        }
        genai.GenerateContentResponse.model_validate(body)
        return Reply(body)

    def text(self, text: str) -> Reply:
        return self._reply([{"text": text}])

    def calls(self, *calls: tuple[str, dict[str, Any]]) -> Reply:
        # Gemini 2.5 signs calls; the client must echo the signature back.
        parts = [{"functionCall": {"name": n, "args": a}, "thoughtSignature": _signature()} for n, a in calls]
        return self._reply(parts)

    def empty(self, reason: str) -> Reply:
        # A blocked candidate comes without content; a truncated one with no parts.
        body = {"candidates": [{"finishReason": reason, "index": 0}],
                "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}}  # fmt: skip
        if reason == "MAX_TOKENS":
            body["candidates"][0]["content"] = {"role": "model"}
        genai.GenerateContentResponse.model_validate(body)
        return Reply(body)

    def answers_tools(self, request: Recorded) -> bool:
        return any("functionResponse" in p for p in request.body["contents"][-1]["parts"])

    def final(self, value: Any) -> Scripted:  # type: ignore[override]
        # With tools, the agent asks for a final_result call; without, for a JSON text.
        def answer(request: Recorded) -> Reply:
            if "final_result" in self.declared_tools(request):
                return self.calls(("final_result", value))
            return self.text(json.dumps(value))

        return answer

    def tool_results(self, request: Recorded) -> list[ToolResultSeen]:
        last = request.body["contents"][-1]
        assert last["role"] == "user"
        seen = []
        for part in last["parts"]:
            response = part["functionResponse"]
            error = "error" in response["response"]
            seen.append(ToolResultSeen(response.get("id"), response["name"], response["response"], error))
        return seen

    def declared_tools(self, request: Recorded) -> list[str]:
        tools = request.body.get("tools") or [{"functionDeclarations": []}]
        return [d["name"] for d in tools[0]["functionDeclarations"]]


class OpenAIFake(ProviderFake):
    family, model = "openai", "gpt-4o-mini"
    key_variable, base_variable = "OPENAI_API_KEY", "OPENAI_BASE_URL"

    @property
    def base_url(self) -> str:
        return f"{self.server.url}/v1"

    @staticmethod
    def check(request: Recorded) -> None:
        assert request.path == "/v1/chat/completions", request.path
        assert request.headers.get("authorization") == f"Bearer {FAKE_KEY}"
        wire.check_openai_request(request.body)

    @staticmethod
    def _reply(message: dict[str, Any], finish: str) -> Reply:
        body = {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        openai.types.chat.ChatCompletion.model_validate(body)
        return Reply(body)

    def text(self, text: str) -> Reply:
        return self._reply({"role": "assistant", "content": text, "refusal": None}, "stop")

    def calls(self, *calls: tuple[str, dict[str, Any]], ids: tuple[str, ...] = ()) -> Reply:
        chosen = list(ids) or [f"call_{next(_ids)}" for _ in calls]
        tool_calls = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for call_id, (n, a) in zip(chosen, calls, strict=True)
        ]
        return self._reply({"role": "assistant", "content": None, "tool_calls": tool_calls}, "tool_calls")

    def empty(self, reason: str) -> Reply:
        return self._reply({"role": "assistant", "content": None, "refusal": None}, reason)

    def answers_tools(self, request: Recorded) -> bool:
        return bool(request.body["messages"][-1]["role"] == "tool")

    def tool_results(self, request: Recorded) -> list[ToolResultSeen]:
        messages = request.body["messages"]
        tail = list(itertools.takewhile(lambda m: m["role"] == "tool", reversed(messages)))[::-1]
        calls = {c["id"]: c["function"]["name"] for c in messages[-len(tail) - 1]["tool_calls"]}
        return [
            ToolResultSeen(
                m["tool_call_id"],
                calls[m["tool_call_id"]],
                m["content"],
                m["content"].startswith("Error: "),
            )
            for m in tail
        ]

    def declared_tools(self, request: Recorded) -> list[str]:
        return [t["function"]["name"] for t in request.body.get("tools", [])]


class AnthropicFake(ProviderFake):
    family, model = "anthropic", "claude-sonnet-4-5"
    key_variable, base_variable = "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"

    @staticmethod
    def check(request: Recorded) -> None:
        assert request.path == "/v1/messages", request.path
        assert request.headers.get("x-api-key") == FAKE_KEY
        assert request.headers.get("anthropic-version") == "2023-06-01"
        wire.check_anthropic_request(request.body)
        roles = [m["role"] for m in request.body["messages"]]
        assert all(a != b for a, b in itertools.pairwise(roles)), f"roles must alternate: {roles}"

    @staticmethod
    def _reply(content: list[dict[str, Any]], stop: str) -> Reply:
        body = {
            "id": f"msg_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        anthropic.types.Message.model_validate(body)
        return Reply(body)

    def text(self, text: str) -> Reply:
        return self._reply([{"type": "text", "text": text}], "end_turn")

    def calls(self, *calls: tuple[str, dict[str, Any]]) -> Reply:
        blocks = [{"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": n, "input": a} for n, a in calls]
        return self._reply([{"type": "text", "text": "Let me check."}, *blocks], "tool_use")

    def empty(self, reason: str) -> Reply:
        return self._reply([], reason)

    def final(self, value: Any) -> Reply:
        block = {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": "final_result",
                 "input": value}  # fmt: skip
        return self._reply([block], "tool_use")

    def answers_tools(self, request: Recorded) -> bool:
        content = request.body["messages"][-1]["content"]
        return isinstance(content, list) and content[-1]["type"] == "tool_result"

    def tool_results(self, request: Recorded) -> list[ToolResultSeen]:
        messages = request.body["messages"]
        uses = {b["id"]: b["name"] for b in messages[-2]["content"] if b["type"] == "tool_use"}
        return [
            ToolResultSeen(b["tool_use_id"], uses[b["tool_use_id"]], b["content"], b.get("is_error", False))
            for b in messages[-1]["content"]
            if b["type"] == "tool_result"
        ]

    def declared_tools(self, request: Recorded) -> list[str]:
        return [t["name"] for t in request.body.get("tools", [])]


FAKES: dict[str, type[ProviderFake]] = {
    "gemini": GeminiFake,
    "openai": OpenAIFake,
    "anthropic": AnthropicFake,
}


def start_fake(family: str) -> ProviderFake:
    kind = FAKES[family]
    return kind(FakeModelServer(kind.check, family).start())  # type: ignore[attr-defined]

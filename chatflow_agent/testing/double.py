"""A provider whose model runs in-process, below the HTTP client.

``ModelDouble`` is a ``Provider`` that hands each request to the real Gemini,
OpenAI or Anthropic provider (picked by the agent's model name, or ``family=``)
with an httpx client whose transport is the test model itself. The real encoder
builds the request, httpx sends it, the test model answers in that provider's
wire format, and the real decoder (and, streamed, the real SSE reader and
accumulator) reads the answer. No socket is opened.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ..core.messages import AssistantMessage, Message, ToolResult, UserMessage
from ..errors import ProviderConfigError
from ..providers.accumulate import Accumulator
from ..providers.base import ModelReply, Provider
from .wire import AgentInfo, Call, ModelTurn, read_request, reply_body, reply_events

if TYPE_CHECKING:
    from ..core.contracts import AgentConfig

_FAMILIES = ("gemini", "openai", "anthropic")
# Requests are answered in-process; this host is never resolved.
_BASE_URL = "http://test-model.invalid"


@dataclass(frozen=True)
class Exchange:
    """One request a test model answered: what it was told and what it said."""

    info: AgentInfo
    messages: tuple[Message, ...]
    turn: ModelTurn
    input_tokens: int
    output_tokens: int
    # The request body exactly as the real provider encoder built it.
    body: dict[str, Any]


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def estimate_input_tokens(info: AgentInfo, messages: Sequence[Message]) -> int:
    """A fixed 50 plus one per word (pydantic-ai's TestModel estimates the same way)."""
    words = _words(info.instructions)
    for message in messages:
        if isinstance(message, UserMessage | ToolResult):
            words += _words(message.content)
        elif isinstance(message, AssistantMessage):
            words += _words(message.content)
            words += sum(_words(json.dumps(c.arguments)) for c in message.tool_calls)
    return 50 + words


def output_tokens(piece: str | Call) -> int:
    if isinstance(piece, Call):
        return 1 + _words(json.dumps(piece.arguments))
    return _words(piece)


class ModelDouble(Provider):
    """A model played in-process, spoken to through a real provider's code path."""

    name = "test"

    def __init__(self, *, family: str | None = None) -> None:
        if family is not None and family not in _FAMILIES:
            raise ValueError(f"family {family!r} is not one of {', '.join(_FAMILIES)}")
        super().__init__(api_key="test-model-key", base_url=_BASE_URL, max_retries=0)
        self.family = family
        self._providers: dict[str, Provider] = {}
        # Every request answered, oldest first: what each test may check.
        self.exchanges: list[Exchange] = []

    # ------------------------------------------------------------ the test model

    @abstractmethod
    def respond(self, info: AgentInfo, messages: list[Message]) -> Awaitable[ModelTurn]:
        """The model's whole reply to one request."""

    def respond_streamed(self, info: AgentInfo, messages: list[Message]) -> AsyncIterator[str | Call]:
        """The reply in pieces: text pieces as they come, then calls. By default, ``respond``'s
        text word by word."""
        return self._pieces(self.respond(info, messages))

    @staticmethod
    async def _pieces(turn: Awaitable[ModelTurn]) -> AsyncIterator[str | Call]:
        whole = await turn
        words = (whole.text or "").split(" ")
        for index, word in enumerate(words):
            yield word if index == len(words) - 1 else f"{word} "
        for call in whole.calls:
            yield call

    # -------------------------------------------------------- the provider's side

    def family_of(self, agent: AgentConfig) -> str:
        if self.family is not None:
            return self.family
        from ..providers.registry import provider_family

        try:
            return provider_family(agent.model)
        except ProviderConfigError as exc:
            raise ProviderConfigError(
                f"a test model speaks the wire format of the agent's model family, and {exc}; "
                "or give the test model family='gemini', 'openai' or 'anthropic'"
            ) from None

    def real_provider(self, agent: AgentConfig) -> Provider:
        family = self.family_of(agent)
        if family not in self._providers:
            from ..providers.anthropic import AnthropicProvider
            from ..providers.gemini import GeminiProvider
            from ..providers.openai import OpenAIProvider

            kind: dict[str, type[GeminiProvider | OpenAIProvider | AnthropicProvider]] = {
                "gemini": GeminiProvider,
                "openai": OpenAIProvider,
                "anthropic": AnthropicProvider,
            }
            self._providers[family] = kind[family](
                api_key="test-model-key", base_url=_BASE_URL, max_retries=0
            )
        return self._providers[family]

    def uses_gemini_dialect(self, agent: AgentConfig) -> bool:
        return self.family_of(agent) == "gemini"

    def _client(self, agent: AgentConfig) -> httpx.AsyncClient:
        family = self.family_of(agent)

        async def answer(request: httpx.Request) -> httpx.Response:
            return await self._answer(family, agent.model, request)

        return httpx.AsyncClient(transport=httpx.MockTransport(answer))

    async def complete(
        self, agent: AgentConfig, messages: Sequence[Message], client: httpx.AsyncClient
    ) -> ModelReply:
        async with self._client(agent) as ours:
            return await self.real_provider(agent).complete(agent, messages, ours)

    async def stream(
        self,
        agent: AgentConfig,
        messages: Sequence[Message],
        client: httpx.AsyncClient,
        on_text: Callable[[str], Awaitable[None]],
    ) -> ModelReply:
        async with self._client(agent) as ours:
            return await self.real_provider(agent).stream(agent, messages, ours, on_text)

    async def _answer(self, family: str, model: str, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        info, messages = read_request(family, model, str(request.url), body)
        prompt = estimate_input_tokens(info, messages)
        if not info.stream:
            turn = await self.respond(info, messages)
            produced = output_tokens(turn.text or "") + sum(output_tokens(c) for c in turn.calls)
            self.exchanges.append(Exchange(info, tuple(messages), turn, prompt, produced, body))
            return httpx.Response(200, json=reply_body(family, model, turn, (prompt, produced)))
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=self._recorded_events(family, model, info, messages, prompt, body),
        )

    async def _recorded_events(
        self,
        family: str,
        model: str,
        info: AgentInfo,
        messages: list[Message],
        prompt: int,
        body: dict[str, Any],
    ) -> AsyncIterator[bytes]:
        texts: list[str] = []
        calls: list[Call] = []
        produced = 0

        async def pieces() -> AsyncIterator[str | Call]:
            nonlocal produced
            async for piece in self.respond_streamed(info, messages):
                if isinstance(piece, Call):
                    calls.append(piece)
                else:
                    texts.append(piece)
                produced += output_tokens(piece)
                yield piece
            # Recorded here, once the reply is known: the reader may stop at the
            # provider's end marker ([DONE]) without draining the last events.
            turn = ModelTurn("".join(texts) or None, tuple(calls))
            self.exchanges.append(Exchange(info, tuple(messages), turn, prompt, produced, body))

        async for event in reply_events(family, model, pieces(), prompt, output_tokens):
            yield event

    # The real provider does all of this; a double is never asked directly.

    def endpoint(self, agent: AgentConfig) -> str:
        return self.real_provider(agent).endpoint(agent)

    def headers(self) -> dict[str, str]:
        return {}

    def request_body(self, agent: AgentConfig, messages: Sequence[Message]) -> dict[str, Any]:
        return self.real_provider(agent).request_body(agent, messages)

    def parse_reply(self, data: Any) -> ModelReply:
        raise NotImplementedError("a test model's replies are parsed by the real provider")

    def accumulator(self) -> Accumulator:
        raise NotImplementedError("a test model's streams are read by the real provider")

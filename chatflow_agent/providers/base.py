"""What every provider shares: the HTTP call, retries, and errors that never show the key."""

from __future__ import annotations

import asyncio
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import httpx

from ..core.messages import AssistantMessage, Message
from ..core.usage import Usage
from ..errors import ProviderError, ProviderHTTPError, ProviderResponseError
from .accumulate import Accumulator
from .sse import iter_sse

if TYPE_CHECKING:
    from ..core.contracts import AgentConfig

logger = logging.getLogger("chatflow_agent.providers")

FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "other"]


@dataclass
class ModelReply:
    """One model call's outcome: the turn, why the model stopped, and what it cost.

    ``finish_reason`` is the same word for every provider: ``"length"`` for a reply
    cut at the token limit, ``"content_filter"`` for one blocked by safety rules
    or refused.
    """

    message: AssistantMessage
    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)

    @property
    def is_empty(self) -> bool:
        """No text and no tool calls: providers refuse such a turn in a history."""
        return not self.message.content and not self.message.tool_calls


_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 30.0


class Provider(ABC):
    """One model API spoken over httpx."""

    name: ClassVar[str]
    # Gemini sees enum values as strings; tools must turn them back.
    gemini_dialect: ClassVar[bool] = False

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
    ) -> None:
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def uses_gemini_dialect(self, agent: AgentConfig) -> bool:
        """Whether ``agent``'s tool arguments arrive in Gemini's dialect (a test model's
        dialect follows the agent's model)."""
        return self.gemini_dialect

    @abstractmethod
    def endpoint(self, agent: AgentConfig) -> str: ...

    @abstractmethod
    def headers(self) -> dict[str, str]: ...

    @abstractmethod
    def request_body(self, agent: AgentConfig, messages: Sequence[Message]) -> dict[str, Any]: ...

    @abstractmethod
    def parse_reply(self, data: Any) -> ModelReply: ...

    async def complete(
        self, agent: AgentConfig, messages: Sequence[Message], client: httpx.AsyncClient
    ) -> ModelReply:
        """Send the conversation and return the model's next turn."""
        body = self.request_body(agent, messages)
        data = await self._post(client, self.endpoint(agent), body)
        try:
            return self.parse_reply(data)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderResponseError(f"{self.name} sent a reply of unexpected shape") from exc

    # ---------------------------------------------------------------- streaming

    @abstractmethod
    def accumulator(self) -> Accumulator: ...

    def stream_endpoint(self, agent: AgentConfig) -> str:
        return self.endpoint(agent)

    def stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True}

    async def stream(
        self,
        agent: AgentConfig,
        messages: Sequence[Message],
        client: httpx.AsyncClient,
        on_text: Callable[[str], Awaitable[None]],
    ) -> ModelReply:
        """Like ``complete``, over server-sent events; ``on_text`` gets each text piece."""
        body = self.stream_body(self.request_body(agent, messages))
        url = self.stream_endpoint(agent)
        headers = {"content-type": "application/json", **self.headers()}
        accumulator = self.accumulator()
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                async with client.stream("POST", url, json=body, headers=headers) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        if response.status_code not in _RETRY_STATUSES or last:
                            raise self._http_error(response)
                        retry_after = response.headers.get("retry-after")
                    else:
                        await self._read_events(response, accumulator, on_text)
                        break
            except httpx.HTTPError as exc:
                if last:
                    raise ProviderError(
                        f"{self.name} could not be reached: {self._scrub(_describe(exc))}"
                    ) from None
                retry_after = None
            await asyncio.sleep(self._delay(attempt, retry_after))
        try:
            return self.parse_reply(accumulator.result())
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            raise ProviderResponseError(f"{self.name} streamed a reply of unexpected shape") from exc

    async def _read_events(
        self,
        response: httpx.Response,
        accumulator: Accumulator,
        on_text: Callable[[str], Awaitable[None]],
    ) -> None:
        async for event in iter_sse(response):
            if event.data.strip() == "[DONE]":
                break
            try:
                data = json.loads(event.data)
                text = accumulator.feed(event.event, data)
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise ProviderResponseError(
                    f"{self.name} streamed an event of unexpected shape"
                ) from exc
            if text:
                await on_text(text)

    async def _post(self, client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Any:
        headers = {"content-type": "application/json", **self.headers()}
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = await client.post(url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                if last:
                    raise ProviderError(
                        f"{self.name} could not be reached: {self._scrub(_describe(exc))}"
                    ) from None
                await asyncio.sleep(self._delay(attempt, None))
                continue
            if response.status_code < 400:
                try:
                    return response.json()
                except json.JSONDecodeError as exc:
                    raise ProviderResponseError(
                        f"{self.name} sent a reply that is not JSON"
                    ) from exc
            if response.status_code not in _RETRY_STATUSES or last:
                raise self._http_error(response)
            logger.info("retrying %s after HTTP %s", self.name, response.status_code)
            await asyncio.sleep(self._delay(attempt, response.headers.get("retry-after")))
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(float(retry_after), _MAX_RETRY_AFTER)
            except ValueError:
                pass
        return float(self.retry_backoff * 2**attempt)

    def _http_error(self, response: httpx.Response) -> ProviderHTTPError:
        detail = response.reason_phrase or "error"
        try:
            payload = response.json()
            error = payload.get("error", payload) if isinstance(payload, dict) else payload
            detail = str(error.get("message", error) if isinstance(error, dict) else error)
        except (json.JSONDecodeError, AttributeError):
            if response.text:
                detail = response.text[:500]
        return ProviderHTTPError(
            f"{self.name} answered HTTP {response.status_code}: {self._scrub(detail)}",
            provider=self.name,
            status_code=response.status_code,
        )

    def _scrub(self, text: str) -> str:
        # Some errors echo the request; the key must never reach a message or a log.
        return text.replace(self._api_key, "[redacted]") if self._api_key else text


def _describe(exc: httpx.HTTPError) -> str:
    # Timeouts carry no message of their own; the class name says what happened.
    text = str(exc).strip()
    kind = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return f"{kind} (no answer in time){': ' + text if text else ''}"
    return f"{kind}: {text}" if text else kind

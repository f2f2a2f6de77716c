"""Token usage of a run, summed over its model calls."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageLimitExceeded


@dataclass
class Usage:
    """Tokens a run used, from each provider's own usage fields.

    ``total_tokens`` is the provider's total where it gives one, else
    ``input_tokens + output_tokens``; ``requests`` counts model calls.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.requests += other.requests

    @classmethod
    def of_request(cls, input_tokens: int, output_tokens: int, total: int | None = None) -> Usage:
        """The usage of one model call; ``total`` defaults to input + output."""
        total_tokens = total if total is not None else input_tokens + output_tokens
        return cls(input_tokens, output_tokens, total_tokens, requests=1)


@dataclass(frozen=True)
class UsageLimits:
    """The most a run may use: model requests, and input, output or total tokens.

    ``None`` is no limit. The request limit is checked before each model call,
    the token limits after each reply; going over raises UsageLimitExceeded
    carrying the usage so far.
    """

    request_limit: int | None = None
    input_tokens_limit: int | None = None
    output_tokens_limit: int | None = None
    total_tokens_limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("request_limit", "input_tokens_limit", "output_tokens_limit",
                     "total_tokens_limit"):  # fmt: skip
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):  # fmt: skip
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")

    def check_before_request(self, usage: Usage) -> None:
        """Raise if one more model request would go over ``request_limit``."""
        if self.request_limit is not None and usage.requests >= self.request_limit:
            raise UsageLimitExceeded(
                f"the next model request would exceed request_limit={self.request_limit}",
                usage=_copy(usage),
            )

    def check_tokens(self, usage: Usage) -> None:
        """Raise if the tokens used so far go over a token limit."""
        for name, used, limit in (
            ("input_tokens_limit", usage.input_tokens, self.input_tokens_limit),
            ("output_tokens_limit", usage.output_tokens, self.output_tokens_limit),
            ("total_tokens_limit", usage.total_tokens, self.total_tokens_limit),
        ):
            if limit is not None and used > limit:
                raise UsageLimitExceeded(
                    f"{used} tokens used exceed {name}={limit}", usage=_copy(usage)
                )


def _copy(usage: Usage) -> Usage:
    return Usage(usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.requests)

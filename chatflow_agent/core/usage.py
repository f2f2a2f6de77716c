"""Token usage of a run, summed over its model calls."""

from __future__ import annotations

from dataclasses import dataclass


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

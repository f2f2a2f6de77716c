"""Native tools for the bridge tests: what ``chatflow worker --tools tests.bridge.native_tools`` serves."""

from __future__ import annotations

from typing import Literal

from chatflow_agent import tool

RECORDED: list[tuple[str, int]] = []


@tool(name="updateSentiment")
def update_sentiment(
    sentiment: Literal["positive", "neutral", "negative"], score: int = 0
) -> dict[str, object]:
    """Record how the contact feels about the conversation.

    Args:
        sentiment: The contact's mood, as the model reads it.
        score: Confidence from 0 to 100.
    """
    RECORDED.append((sentiment, score))
    return {"saved": True, "sentiment": sentiment, "score": score}


@tool(name="openTicket")
async def open_ticket(subject: str) -> str:
    """Open a support ticket.

    Args:
        subject: What the ticket is about.
    """
    raise RuntimeError(f"ticket system rejected {subject!r}")


TOOLS = [update_sentiment, open_ticket]

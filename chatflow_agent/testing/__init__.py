"""Models for testing agents without a network: ``TestModel`` and ``FunctionModel``.

Pass one as the agent's provider; the agent's model name still picks the wire
format, so the real Gemini, OpenAI or Anthropic encoder and decoder run::

    agent = Agent("a", tools=[lookup], model="claude-sonnet-4-5", provider=TestModel())
"""

from .double import Exchange, ModelDouble
from .models import FunctionModel, TestModel
from .values import TestModelError
from .wire import AgentInfo, Call, ModelTurn, ToolDefinition

__all__ = [
    "AgentInfo",
    "Call",
    "Exchange",
    "FunctionModel",
    "ModelDouble",
    "ModelTurn",
    "TestModel",
    "TestModelError",
    "ToolDefinition",
]

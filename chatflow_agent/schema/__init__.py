"""Schema introspection: one type walk, rendered in the Gemini, JSON Schema and strict dialects."""

from .dialects import JsonSchemaRenderer, render_gemini
from .nodes import NO_DEFAULT, Node
from .signature import FunctionSpec, ToolParameter, describe_function
from .walk import TypeWalker, gemini_enum_text

__all__ = [
    "NO_DEFAULT",
    "FunctionSpec",
    "JsonSchemaRenderer",
    "Node",
    "ToolParameter",
    "TypeWalker",
    "describe_function",
    "gemini_enum_text",
    "render_gemini",
]

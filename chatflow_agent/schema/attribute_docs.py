"""Attribute docstrings: the string literal under an annotated class attribute."""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap


def attribute_docstrings(cls: type) -> dict[str, str]:
    """``{attribute: docstring}`` read from ``cls``'s source, as pydantic's
    ``use_attribute_docstrings`` does; empty when the source cannot be read
    (a class built at run time, a frozen application)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return {}
    body = next((node.body for node in tree.body if isinstance(node, ast.ClassDef)), [])
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs

"""Reading an OpenAPI document someone sent: bounded, and closed to the outside world.

* size: at most ``max_bytes`` of text;
* YAML aliases are allowed but bounded: the document's size counts every alias expanded
  (a 610-byte "billion laughs" bomb is refused after a few hundred nodes), a recursive
  alias is refused;
* depth and node count: at most ``max_depth`` levels and ``max_nodes`` nodes (expanded);
* time: the YAML composer checks a deadline as it goes;
* references: only ``#...`` references inside the document; a ``$ref`` to a file, a URL or
  another document, and a ``$id`` (which would move the base of relative references), are
  refused with their JSON path, before anything could resolve them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from ..errors import ChatflowError


class OpenApiError(ChatflowError, ValueError):
    """Raised when a spec cannot be read or is not valid OpenAPI; says where it broke."""


@dataclass(frozen=True, slots=True)
class SpecLimits:
    max_bytes: int = 4 * 1024 * 1024
    max_depth: int = 64
    max_nodes: int = 200_000
    timeout_s: float = 10.0


class _Deadline(ChatflowError):
    """Raised when the composer passes its time bound."""


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """PyYAML's safe loader whose composer checks a deadline every few hundred nodes."""

    deadline = float("inf")
    composed = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self.composed += 1
        if self.composed % 256 == 0 and time.monotonic() > self.deadline:
            raise _Deadline
        node: Node = super().compose_node(parent, index)
        return node


def load_document(text: str, limits: SpecLimits, deadline: float) -> Any:
    """The document as Python values, within ``limits``; OpenApiError otherwise."""
    if len(text.encode("utf-8")) > limits.max_bytes:
        raise OpenApiError(f"$: the spec is larger than {limits.max_bytes} bytes")
    try:
        if text.lstrip()[:1] in ("{", "["):
            try:
                data = json.loads(text)
            except ValueError:
                data = _load_yaml(text, limits, deadline)  # YAML says where it broke
            else:
                _check_tree(data, limits)
        else:
            data = _load_yaml(text, limits, deadline)
    except RecursionError as exc:
        raise OpenApiError(f"$: nested deeper than {limits.max_depth} levels") from exc
    except _Deadline as exc:
        raise OpenApiError(f"$: reading the spec took longer than {limits.timeout_s:g}s") from exc
    check_references(data)
    return data


def _load_yaml(text: str, limits: SpecLimits, deadline: float) -> Any:
    loader = _BoundedLoader(text)
    loader.deadline = deadline
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_graph(node, limits)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown place"
        raise OpenApiError(f"not YAML or JSON at {where}: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise OpenApiError(f"not YAML or JSON: {exc}") from exc
    finally:
        loader.dispose()


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_graph(root: Node, limits: SpecLimits) -> None:
    """Size with every alias expanded, and depth, of the composed node graph (aliases make
    it a graph: one node object under many parents). Iterative, memoised per node."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            on_path.discard(key)
            if size[key] > limits.max_nodes:
                raise OpenApiError(f"$: more than {limits.max_nodes} nodes with YAML aliases "
                                   "expanded")
            if depth[key] > limits.max_depth:
                raise OpenApiError(f"$: nested deeper than {limits.max_depth} levels")
            continue
        if key in size:
            continue
        if key in on_path:
            raise OpenApiError("$: a YAML alias refers to a node that contains it (recursive)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((kid, False) for kid in _children(node) if id(kid) not in size)


def _check_tree(data: Any, limits: SpecLimits) -> None:
    nodes = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, level = stack.pop()
        nodes += 1
        if nodes > limits.max_nodes:
            raise OpenApiError(f"$: more than {limits.max_nodes} nodes")
        if level > limits.max_depth:
            raise OpenApiError(f"$: nested deeper than {limits.max_depth} levels")
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)


def _step(path: str, key: Any) -> str:
    text = str(key)
    return f"{path}.{text}" if text.replace("_", "a").isalnum() else f"{path}[{json.dumps(text)}]"


def check_references(data: Any) -> None:
    """Refuse every reference that leaves the document, naming its JSON path."""
    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
            continue
        if not isinstance(value, dict):
            continue
        for key in ("$ref", "$dynamicRef"):
            ref = value.get(key)
            # A non-string value is a property named "$ref" (under "properties"), not a reference.
            if isinstance(ref, str) and not ref.startswith("#"):
                raise OpenApiError(f"{_step(path, key)}: only references inside the document "
                                   "(starting with '#') are resolved; external references "
                                   "(files, URLs, other documents) are refused")
        if "$id" in value and isinstance(value["$id"], str):
            raise OpenApiError(f"{_step(path, '$id')}: '$id' is refused: it would move where "
                               "references resolve, outside the document")
        stack.extend((v, _step(path, k)) for k, v in value.items())

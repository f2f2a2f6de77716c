"""``{{name.path.0.field}}`` rendering, exactly as SPEC says.

One pass, left to right: a value that itself contains ``{{...}}`` is not
rendered again, so a variable can never expand into more templates (no
interpolation bombs). The rendered text is capped by ``max_chars``.

URLs are rendered by :func:`render_url`: values are percent-encoded for the part of
the URL they land in, and never set the scheme, host or port (docs/security.md).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from .errors import ChatflowError

_TOKEN = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
CONTEXT_ROOTS = frozenset({"router", "flow", "contact"})
_MISSING = object()


class RenderTooLarge(ChatflowError, ValueError):
    """Raised when a rendered template would exceed the configured size cap."""


def lookup(path: str, variables: Mapping[str, Any], context: Mapping[str, Any]) -> Any:
    """The raw value at ``path`` (``None`` when missing)."""
    value = _resolve(path, variables, context)
    return None if value is _MISSING else value


def _resolve(path: str, variables: Mapping[str, Any], context: Mapping[str, Any]) -> Any:
    return _resolve_parts(path.split("."), variables, context)


def _resolve_parts(parts: list[str] | tuple[str, ...], variables: Mapping[str, Any],
                   context: Mapping[str, Any]) -> Any:
    head = parts[0]
    if head in CONTEXT_ROOTS and head in context:
        current: Any = context[head]
    elif head in variables:
        current = variables[head]
    else:
        return _MISSING
    if len(parts) == 1:  # the usual token, one name: no slice, no loop
        return current
    for part in parts[1:]:
        current = _child(current, part)
        if current is _MISSING:
            return _MISSING
    return current


def _child(value: Any, part: str) -> Any:
    if type(value) is dict:  # the usual value, told apart before the Mapping ABC's check
        return value.get(part, _MISSING)
    if isinstance(value, str) and value[:1] in "[{":
        # A JSON body stored as text is still readable by path.
        try:
            value = json.loads(value)
        except ValueError:
            return _MISSING
    if isinstance(value, Mapping):
        return value.get(part, _MISSING)
    if isinstance(value, list) and part.lstrip("-").isdecimal():
        index = int(part)
        return value[index] if -len(value) <= index < len(value) else _MISSING
    return _MISSING


def to_text(value: Any) -> str:
    """How a value reads inside a string: JS-like scalars, compact JSON for the rest."""
    if value is None or value is _MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# Templates come from definitions and repeat on every execution: each is parsed once into
# (text before a token, the token's path split on dots) pairs and the text after the last.
# Only short ones are kept, so the cache stays small whatever a command sends.
_COMPILED_MAX_CHARS = 512
Compiled = tuple[tuple[tuple[str, tuple[str, ...]], ...], str]


@functools.lru_cache(maxsize=2048)
def _compiled(template: str) -> Compiled:
    pieces: list[tuple[str, tuple[str, ...]]] = []
    pos = 0
    for match in _TOKEN.finditer(template):
        pieces.append((template[pos : match.start()], tuple(match.group(1).split("."))))
        pos = match.end()
    return tuple(pieces), template[pos:]


@functools.lru_cache(maxsize=2048)
def _one_name(template: str) -> str | None:
    """The name when ``template`` is one token of one name (``{{n}}``), else None."""
    pieces, tail = _compiled(template)
    if len(pieces) == 1 and not tail and not pieces[0][0] and len(pieces[0][1]) == 1:
        return pieces[0][1][0]
    return None


def render(
    template: str,
    variables: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    max_chars: int = 1_000_000,
) -> str:
    if "{{" not in template:
        return template
    # A longer template is parsed each time (see ``_COMPILED_MAX_CHARS``).
    short = len(template) <= _COMPILED_MAX_CHARS
    name = _one_name(template) if short else None
    if name is not None:
        # ``{{name}}``, the usual return value and input: looked up here, as
        # ``_resolve_parts`` would, and a string (the usual value) is its own text.
        value = (context[name] if name in CONTEXT_ROOTS and name in context
                 else variables.get(name, _MISSING))
        text = value if type(value) is str else to_text(value)
        if len(text) > max_chars:
            raise RenderTooLarge(f"rendered text exceeds {max_chars} characters")
        return text
    pieces, tail = _compiled(template) if short else _compiled.__wrapped__(template)
    if len(pieces) == 1 and not tail and not pieces[0][0]:
        # The template is one token with a path: its text, with no list to join.
        text = to_text(_resolve_parts(pieces[0][1], variables, context))
        if len(text) > max_chars:
            raise RenderTooLarge(f"rendered text exceeds {max_chars} characters")
        return text
    out: list[str] = []
    size = 0
    for text, parts in pieces:
        if len(parts) == 1:  # a one-name token, looked up here (as above)
            head = parts[0]
            value = (context[head] if head in CONTEXT_ROOTS and head in context
                     else variables.get(head, _MISSING))
        else:
            value = _resolve_parts(parts, variables, context)
        piece = text + (value if type(value) is str else to_text(value))
        size += len(piece)
        if size > max_chars:
            raise RenderTooLarge(f"rendered text exceeds {max_chars} characters")
        out.append(piece)
    out.append(tail)
    return "".join(out)


class UnsafeUrlTemplate(ChatflowError, ValueError):
    """Raised when a URL template would take its scheme, host or port from a variable."""


_URL_SPECIALS = "/?#"


def render_url(
    template: str,
    variables: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    max_chars: int = 1_000_000,
) -> str:
    """Render a URL template with every value encoded for the part of the URL it lands in.

    Values in the path are percent-encoded as one segment (``/``, ``?``, ``#`` and a
    ``..`` segment cannot escape it), values in the query or fragment as one component
    (``&``, ``=`` and ``#`` cannot add parameters). Scheme, host and port come only from
    the template's own text, unless the whole URL is one ``{{token}}``: then the value is
    the URL, and the HTTP layer validates and egress-checks it like any other.
    """
    stripped = template.strip()
    if "{{" not in stripped or _TOKEN.fullmatch(stripped):
        return render(stripped, variables, context, max_chars=max_chars)
    tokens = list(_TOKEN.finditer(stripped))
    skeleton = _TOKEN.sub("\0", stripped)  # one character per token: positions line up
    parts = _url_parts(skeleton)
    out: list[str] = []
    size = pos = 0
    for index, (match, at) in enumerate(zip(tokens, _positions(skeleton), strict=True)):
        part = parts(at)
        if part == "origin":
            raise UnsafeUrlTemplate(
                f"URL template {template!r}: variable {{{{{match.group(1)}}}}} (token "
                f"{index + 1}) is in the scheme, host or port; those must be literal text, "
                "or the whole URL must be a single {{variable}}"
            )
        value = to_text(_resolve(match.group(1), variables, context))
        encoded = quote(value, safe="")
        if part == "path" and encoded.strip(".") == "" and encoded:
            encoded = encoded.replace(".", "%2E")  # no "." or ".." segment from a value
        piece = stripped[pos : match.start()] + encoded
        size += len(piece)
        if size > max_chars:
            raise RenderTooLarge(f"rendered text exceeds {max_chars} characters")
        out.append(piece)
        pos = match.end()
    out.append(stripped[pos:])
    return "".join(out)


def _positions(skeleton: str) -> list[int]:
    return [i for i, char in enumerate(skeleton) if char == "\0"]


def _url_parts(skeleton: str) -> Callable[[int], str]:
    """Classify positions of a URL's text: origin, path, query or fragment."""
    scheme_end = skeleton.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    ends = [i for i in (skeleton.find(c, start) for c in _URL_SPECIALS) if i >= 0]
    origin_end = min(ends) if ends else len(skeleton)
    fragment = skeleton.find("#", origin_end)
    query = skeleton.find("?", origin_end)
    if fragment >= 0 and query > fragment:
        query = -1

    def part(at: int) -> str:
        if at < origin_end:
            return "origin"
        if fragment >= 0 and at > fragment:
            return "fragment"
        if query >= 0 and at > query:
            return "query"
        return "path"

    return part

"""Per-parameter descriptions from Google, NumPy and Sphinx docstrings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SECTIONS = {
    "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
    "other parameters", "returns", "return", "yields", "yield", "raises", "raise",
    "examples", "example", "notes", "note", "attributes", "see also", "warns",
    "warnings", "warning", "references", "todo", "methods",
}  # fmt: skip
_PARAM_SECTIONS = {
    "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
    "other parameters",
}  # fmt: skip
_UNDERLINE = re.compile(r"^-{3,}$")
_SPHINX_FIELD = re.compile(r"^:(\w+)([^:]*):\s*(.*)$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}([\w, *]+?)\s*(?::.*)?$")


@dataclass
class ParsedDocstring:
    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _clean(parts: list[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def _is_header(line: str) -> bool:
    """A section header (``Args:``, ``Returns:``...) written at the start of ``line``."""
    return line == line.lstrip() and line.endswith(":") \
        and line.rstrip(":").strip().lower() in _SECTIONS


def _dedent(doc: str) -> list[str]:
    """The docstring's lines with the common margin removed, a header on line one kept as one.

    ``inspect.cleandoc`` strips the first line and dedents the others separately,
    so after ``Args:`` on the first line its entries sit at the header's own
    indent and read as the end of the section. The lines after such a header
    are indented under it again, whether ``doc`` was raw or already cleaned.
    """
    lines = doc.expandtabs().splitlines()
    first, rest = lines[0].strip(), lines[1:]
    margin = min((_indent(line) for line in rest if line.strip()), default=0)
    rest = [line[margin:] for line in rest]
    if _is_header(first):
        # A later header at the margin (``Returns:`` right after the entries, with no blank
        # line) is the next section, not more of the last entry's text: it stays put.
        rest = ["    " + line if line.strip() and not _is_header(line) else line
                for line in rest]
    cleaned = [first, *rest]
    while cleaned and not cleaned[0].strip():
        cleaned.pop(0)
    while cleaned and not cleaned[-1].strip():
        cleaned.pop()
    return cleaned


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its summary and the descriptions of its parameters."""
    if not doc:
        return ParsedDocstring()
    lines = _dedent(doc)
    result = ParsedDocstring()
    summary_end = len(lines)
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        header = stripped.rstrip(":").strip().lower()
        next_line = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _SPHINX_FIELD.match(stripped):
            summary_end = min(summary_end, index)
            index = _read_sphinx(lines, index, result.params)
        elif header in _SECTIONS and _UNDERLINE.match(next_line):
            summary_end = min(summary_end, index)
            if header in _PARAM_SECTIONS:
                index = _read_numpy(lines, index + 2, result.params)
            else:
                index += 2
        elif header in _SECTIONS and stripped.endswith(":"):
            summary_end = min(summary_end, index)
            if header in _PARAM_SECTIONS:
                index = _read_google(lines, index, result.params)
            else:
                index += 1
        else:
            index += 1
    result.summary = "\n".join(lines[:summary_end]).strip()
    return result


def _read_google(lines: list[str], header: int, params: dict[str, str]) -> int:
    base = _indent(lines[header])
    entry_indent: int | None = None
    current: list[str] | None = None
    index = header + 1
    while index < len(lines):
        line = lines[index]
        if line.strip() and _indent(line) <= base:
            break
        if line.strip():
            entry_indent = _indent(line) if entry_indent is None else entry_indent
            match = _GOOGLE_ENTRY.match(line.strip())
            if _indent(line) == entry_indent and match:
                current = [match.group(2)]
                params[match.group(1)] = ""
                name = match.group(1)
            elif current is not None:
                current.append(line)
            if current is not None:
                params[name] = _clean(current)
        index += 1
    return index


def _read_numpy(lines: list[str], start: int, params: dict[str, str]) -> int:
    base: int | None = None
    names: list[str] = []
    current: list[str] = []
    index = start
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if line.strip() and _UNDERLINE.match(following):
            break
        if line.strip():
            base = _indent(line) if base is None else base
            match = _NUMPY_ENTRY.match(line.strip())
            if _indent(line) == base and match:
                names = [n.strip().lstrip("*") for n in match.group(1).split(",") if n.strip()]
                current = []
            else:
                current.append(line)
            for name in names:
                params[name] = _clean(current)
        index += 1
    return index


def _read_sphinx(lines: list[str], start: int, params: dict[str, str]) -> int:
    match = _SPHINX_FIELD.match(lines[start].strip())
    assert match is not None
    parts = [match.group(3)]
    index = start + 1
    while index < len(lines) and lines[index].strip() and not lines[index].strip().startswith(":"):
        parts.append(lines[index])
        index += 1
    if match.group(1) in {"param", "parameter", "arg", "argument", "key", "keyword"}:
        words = match.group(2).split()
        if words:
            params[words[-1]] = _clean(parts)
    return index

"""Reading descriptions and constraints out of ``Annotated`` metadata and pydantic fields."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import annotated_types as at
from pydantic.fields import FieldInfo

from .nodes import Constraints


@dataclass
class Metadata:
    """What a run of ``Annotated`` extras says about one value."""

    description: str | None = None
    constraints: Constraints = field(default_factory=Constraints)

    def absorb(self, other: Metadata) -> None:
        self.description = other.description or self.description
        self.constraints = self.constraints.merged(other.constraints)


_SIMPLE: dict[type[at.BaseMetadata], tuple[str, str]] = {
    at.Ge: ("ge", "minimum"),
    at.Gt: ("gt", "exclusive_minimum"),
    at.Le: ("le", "maximum"),
    at.Lt: ("lt", "exclusive_maximum"),
    at.MultipleOf: ("multiple_of", "multiple_of"),
    at.MinLen: ("min_length", "min_length"),
    at.MaxLen: ("max_length", "max_length"),
}


def read_metadata(extras: Iterable[object]) -> Metadata:
    """Fold ``Annotated`` extras into one description and one set of constraints.

    Unknown extras are skipped on purpose: validators and the like still run
    when pydantic checks the arguments, they just have no schema keyword.
    """
    result = Metadata()
    for extra in extras:
        result.absorb(_read_one(extra))
    return result


def _read_one(extra: object) -> Metadata:
    if isinstance(extra, str):
        return Metadata(description=extra)
    if isinstance(extra, FieldInfo):
        found = read_metadata(extra.metadata)
        found.description = extra.description or found.description
        return found
    for kind, (attr, keyword) in _SIMPLE.items():
        if isinstance(extra, kind):
            return Metadata(constraints=Constraints(**{keyword: getattr(extra, attr)}))
    if isinstance(extra, at.GroupedMetadata):
        return read_metadata(iter(extra))
    pattern = getattr(extra, "pattern", None)
    if isinstance(pattern, str):
        return Metadata(constraints=Constraints(pattern=pattern))
    documentation = getattr(extra, "documentation", None)
    if type(extra).__name__ == "Doc" and isinstance(documentation, str):
        return Metadata(description=documentation)
    return Metadata()

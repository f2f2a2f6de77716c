"""Old names kept for one release: a module's ``__getattr__`` that answers each with the new
object and a DeprecationWarning naming the new spelling (PEP 562)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any


def renamed(module: str, names: Mapping[str, str], scope: Mapping[str, Any]) -> Callable[[str], Any]:
    """``__getattr__`` for ``module``: ``names`` maps each old name to its new one in ``scope``
    (the module's globals)."""

    def __getattr__(name: str) -> Any:
        if name in names:
            warnings.warn(f"{module}.{name} is now {names[name]}", DeprecationWarning,
                          stacklevel=2)
            return scope[names[name]]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__

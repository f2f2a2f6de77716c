"""The tool registry's I/O: the event log on Redis, its projections, the operations.

See docs/registry.md. The pure part (folding, views, validation) is
``runtime.registry``.
"""

from .errors import ApiCode, Conflict, Invalid, NotFound, RegistryError
from .registry import Registry

__all__ = ["ApiCode", "Conflict", "Invalid", "NotFound", "Registry", "RegistryError"]

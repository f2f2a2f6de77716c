"""The tool registry's pure core: events folded into a state, views, validation.

Nothing here touches Redis or the network. ``handlers.registry`` appends events
to the registry log and writes the projections computed here.
"""

from .state import Ref, RegistryState

__all__ = ["Ref", "RegistryState"]

"""The tool registry's pure core: events folded into a state, views, validation.

Nothing here touches Redis or the network. ``handlers.registry`` appends events
to the registry log and writes the projections computed here.
"""

from .state import DEFAULT_WORKSPACE, Ref, RegistryState, workspace_of

__all__ = ["DEFAULT_WORKSPACE", "Ref", "RegistryState", "workspace_of"]

"""The control plane: what changes what the workers run and who may ask. API keys, the
example tools published by ``chatflow up``, a workspace's tools as callable functions (the
registry of published tools is ``handlers.registry``)."""

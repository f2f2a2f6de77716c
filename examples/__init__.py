"""Example tools, published by ``chatflow up`` (installed as the ``chatflow_examples`` package)."""

"""Interfaces to outside programs that are not the HTTP API, the CLI or the Studio (those are
``handlers.api``, ``handlers.cli`` and ``handlers.studio``): the producer's client, the MCP
server and the AsyncAPI document of the public streams."""

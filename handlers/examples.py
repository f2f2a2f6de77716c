"""Publishing the example tools (``chatflow up``)."""

from __future__ import annotations

from importlib import resources

from schemas.definition import PublishedTool

from .keys import Keys
from .redis_client import make_client
from .settings import Settings


def example_tools() -> list[PublishedTool]:
    folder = resources.files("chatflow_examples")
    return [PublishedTool.model_validate_json(item.read_bytes())
            for item in sorted(folder.iterdir(), key=lambda p: p.name)
            if item.name.endswith(".json")]


async def publish_examples(settings: Settings, url: str) -> list[str]:
    keys = Keys(settings.prefix, settings.partitions)
    client = make_client(url, cluster=settings.redis_cluster)
    try:
        tools = example_tools()
        for tool in tools:
            await client.set(keys.tool(tool.id), tool.model_dump_json(by_alias=True,
                                                                      exclude_none=True))
        return [t.id for t in tools]
    finally:
        await client.aclose()

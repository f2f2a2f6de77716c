"""The Redis client's Protocols (chatflow_agent.runtime_client.ProducerClient,
chatflow.handlers.redis_client.Client, Pipeline) describe what redis-py's asyncio clients
really have: every command they declare exists on ``Redis`` and on ``RedisCluster`` (and on
both pipelines), and takes every parameter name the Protocol gives it, so a call mypy
accepts is a call redis-py accepts."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline as RedisPipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster

from chatflow.handlers.redis_client import Client, Pipeline, Script
from chatflow_agent.runtime_client import ProducerClient

PROTOCOL_ONLY = {"__aenter__", "__aexit__"}  # checked on the pipelines, by name only


def declared(protocol: type) -> dict[str, Any]:
    return {name: member for name, member in vars(protocol).items()
            if callable(member) and (not name.startswith("_") or name in PROTOCOL_ONLY)}


def pairs() -> list[tuple[type, type, str]]:
    out = []
    for protocol, real in [(ProducerClient, Redis), (ProducerClient, RedisCluster),
                           (Client, Redis), (Client, RedisCluster),
                           (Pipeline, RedisPipeline), (Pipeline, ClusterPipeline)]:
        out += [(protocol, real, name) for name in declared(protocol)]
    return out


@pytest.mark.parametrize(("protocol", "real", "name"), pairs(),
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_each_declared_command_exists_and_takes_its_parameters(protocol: type, real: type,
                                                               name: str) -> None:
    assert hasattr(real, name), f"{real.__name__} has no {name}"
    if name in PROTOCOL_ONLY:
        return
    ours = inspect.signature(declared(protocol)[name]).parameters
    theirs = inspect.signature(getattr(real, name)).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in theirs.values())
    for param in ours.values():
        if param.name == "self" or param.kind is param.VAR_POSITIONAL:
            continue
        assert param.name in theirs or takes_any, f"{real.__name__}.{name} takes no {param.name}"


def test_a_registered_script_has_its_sha_and_is_called_with_keys_and_args() -> None:
    from redis.commands.core import AsyncScript

    assert "sha" in Script.__annotations__
    call = inspect.signature(AsyncScript.__call__).parameters
    assert {"keys", "args"} <= set(call)


def test_the_handlers_client_is_the_producers_and_more() -> None:
    assert set(declared(ProducerClient)) < set(dir(Client))

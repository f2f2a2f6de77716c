"""The public surface is small and pinned."""

from __future__ import annotations

import chatflow_agent
from chatflow_agent import errors


def test_the_package_exports_exactly_its_public_names() -> None:
    assert sorted(chatflow_agent.__all__) == [
        "Agent",
        "ChatflowAgentError",
        "MaxTurnsExceeded",
        "RunContext",
        "RunHooks",
        "RunResult",
        "Runner",
        "Tool",
        "ToolCall",
        "ToolExecutionError",
        "ToolResult",
        "ToolSchemaError",
        "Usage",
        "UsageLimitExceeded",
        "UsageLimits",
        "__version__",
        "tool",
    ]


def test_every_exported_name_is_importable_and_public() -> None:
    for name in chatflow_agent.__all__:
        member = getattr(chatflow_agent, name)
        if name != "__version__":
            assert member.__module__.startswith("chatflow_agent.") or member.__module__ == "chatflow_agent"


def test_the_version_is_the_0_4_feature_set() -> None:
    assert chatflow_agent.__version__ == "0.4.0"


def test_session_store_lives_where_the_seed_imports_it() -> None:
    from chatflow_agent.core.memory import SessionStore

    assert SessionStore().__class__.__name__ == "SessionStore"


def test_every_error_derives_from_the_sdk_root_and_says_when_it_is_raised() -> None:
    for name in errors.__all__:
        error = getattr(errors, name)
        assert issubclass(error, errors.ChatflowAgentError)
        doc = error.__doc__ or ""
        assert doc.startswith("Raised when") and "\n" not in doc.strip(), name


def test_the_error_tree_lets_callers_catch_by_kind() -> None:
    assert issubclass(errors.ToolSchemaError, errors.ToolError)
    assert issubclass(errors.ToolSchemaError, TypeError)
    assert issubclass(errors.ToolArgumentsError, errors.ToolExecutionError)
    assert issubclass(errors.ProviderHTTPError, errors.ProviderError)
    assert issubclass(errors.ProviderConfigError, errors.ProviderError)


def test_the_testing_package_exports_its_models_and_what_they_speak_in() -> None:
    import chatflow_agent.testing as testing

    assert sorted(testing.__all__) == [
        "AgentInfo",
        "Call",
        "Exchange",
        "FunctionModel",
        "ModelDouble",
        "ModelTurn",
        "TestModel",
        "TestModelError",
        "ToolDefinition",
    ]
    for name in testing.__all__:
        assert getattr(testing, name).__module__.startswith("chatflow_agent.testing.")

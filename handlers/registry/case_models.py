"""Request bodies of saved test cases: the case, its mocks and what it expects.

A mock is told by its keys (``runtime.registry.cases.mock_kind``) and then checked against
that kind's model, so a bad one is named by its block: ``mocks.fetch: status: Input should
be less than or equal to 599``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chatflow.runtime.conditions import regex_problem
from chatflow.runtime.registry.cases import SHAPES, mock_kind

SNAKE = r"^[a-z][a-z0-9_]*$"
CASE_ID = r"^[A-Za-z0-9_.-]{1,64}$"


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MockError(_In):
    code: str = Field(pattern=SNAKE, max_length=100)
    message: str = Field(default="", max_length=4000)


class HttpMock(_In):
    """An httpCall's or callEndpoint's answer."""

    status: int = Field(ge=100, le=599)
    body: Any = None
    headers: dict[str, str] = Field(default_factory=dict)


class AIMock(_In):
    """A callAI's answer: the model's text (or, for ``outputFormat: json``, its value)."""

    result: Any


class MediaMock(_In):
    """A fetchMedia's answer: the bytes, base64, and their MIME type."""

    base64: str
    mimeType: str = Field(min_length=1, max_length=200)

    @field_validator("base64")
    @classmethod
    def _decodes(cls, value: str) -> str:
        try:
            base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("not valid base64") from exc
        return value


class ErrorMock(_In):
    """The block fails with this error."""

    error: MockError


MODELS: dict[str, type[_In]] = {"http": HttpMock, "ai": AIMock, "media": MediaMock,
                                "error": ErrorMock}


class Expect(_In):
    result: str | None = None
    resultMatches: str | None = Field(default=None, max_length=1000)
    errorCode: str | None = Field(default=None, pattern=SNAKE, max_length=100)
    path: list[str] | None = Field(default=None, max_length=500)

    @field_validator("resultMatches")
    @classmethod
    def _re2(cls, value: str | None) -> str | None:
        problem = regex_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value


class CaseIn(_In):
    """A test case as saved: ``POST /tools/{id}/tests`` (``id`` optional), ``PUT`` (all)."""

    id: str | None = Field(default=None, pattern=CASE_ID)
    name: str = Field(min_length=1, max_length=200)
    inputs: dict[str, Any] = Field(default_factory=dict)
    variables: dict[str, Any] = Field(default_factory=dict)
    contactId: str | None = Field(default=None, min_length=1, max_length=200)
    mocks: dict[str, dict[str, Any]] = Field(default_factory=dict)
    expect: Expect = Field(default_factory=Expect)
    # What the case lacks to run as recorded (a masked secret); saved from a run, shown
    # beside its result.
    needs: list[str] = Field(default_factory=list, max_length=100)
    version: int | None = None

    @field_validator("mocks")
    @classmethod
    def _mocks(cls, mocks: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for key, mock in mocks.items():
            if not key or len(key) > 300:
                raise ValueError(f"{key!r}: a block id, or toolId/blockId, of 1 to 300 characters")
            kind = mock_kind(mock)
            if kind is None:
                raise ValueError(f"{key}: expected one of {', '.join(SHAPES.values())}")
            try:
                model = MODELS[kind].model_validate(mock)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"{key}: {where + ': ' if where else ''}{first['msg']}") from exc
            out[key] = model.model_dump(mode="json", exclude_unset=True)
        return out

    def record(self, case_id: str) -> dict[str, Any]:
        """The case as the registry keeps it."""
        data = self.model_dump(mode="json", exclude={"id", "version"})
        data["expect"] = self.expect.model_dump(mode="json", exclude_none=True)
        return {"id": case_id, **data}


class RunCases(_In):
    """``POST /tools/{id}/tests/run``: against the draft (default) or a published version."""

    version: int | None = Field(default=None, ge=1, description="a published version; "
                                                                  "absent: the draft")
    cases: list[str] | None = Field(default=None, max_length=1000,
                                    description="case ids; absent: every case")


class FromRun(_In):
    """``POST /executions/{id}/test-case``: a case made from a recorded run."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    id: str | None = Field(default=None, pattern=CASE_ID)

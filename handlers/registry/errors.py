"""Registry errors; each maps to one HTTP status (never 500) and one CLI exit message."""

from __future__ import annotations

from typing import Any

from chatflow.runtime.errors import ChatflowError


class RegistryError(ChatflowError):
    """Raised when a registry operation cannot be done; ``status`` is its HTTP status."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, problems: list[str] | None = None,
                 code: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []
        self.extra = extra
        if code:
            self.code = code

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.problems:
            out["problems"] = [_split(p) for p in self.problems]
        out.update(self.extra)
        return out

    def __str__(self) -> str:
        lines = [self.message, *(f"  {p}" for p in self.problems)]
        return "\n".join(lines)


def _split(problem: str) -> dict[str, str]:
    path, sep, message = problem.partition(": ")
    return {"path": path, "message": message} if sep else {"path": "$", "message": problem}


class Invalid(RegistryError):
    """Raised when the request itself is wrong (400)."""

    status = 400
    code = "invalid"


class NotFound(RegistryError):
    """Raised when the named thing does not exist (404)."""

    status = 404
    code = "not_found"


class Conflict(RegistryError):
    """Raised when the request conflicts with the registry's current state (409)."""

    status = 409
    code = "conflict"


class Unauthorized(RegistryError):
    """Raised when a caller lacks the credentials a route needs: no, unknown, revoked or
    expired token, or a wrong internal secret (401)."""

    status = 401
    code = "unauthorized"


class Forbidden(RegistryError):
    """Raised when a caller's role does not allow the operation (403)."""

    status = 403
    code = "forbidden"

"""One error type with a code enum. Business code raises ``AppError(ErrorCode.X, "message")``; one FastAPI handler
(``app.api.errors``) turns it into a JSON body ``{"error": {"code": ..., "message": ..., "details": ...}}`` with the
HTTP status below."""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(str, enum.Enum):
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    VALIDATION = "validation_error"
    CONFLICT = "conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    RATE_LIMITED = "rate_limited"
    DATABASE_UNAVAILABLE = "database_unavailable"
    INDEX_UNAVAILABLE = "index_unavailable"
    DEPENDENCY_UNAVAILABLE = "dependency_unavailable"
    PARSE_FAILED = "parse_failed"
    CONFIGURATION = "configuration_error"
    MISSING_EXTRA = "missing_extra"
    INTERNAL = "internal_error"


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.VALIDATION: 422,
    ErrorCode.CONFLICT: 409,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.DATABASE_UNAVAILABLE: 503,
    ErrorCode.INDEX_UNAVAILABLE: 503,
    ErrorCode.DEPENDENCY_UNAVAILABLE: 503,
    ErrorCode.PARSE_FAILED: 422,
    ErrorCode.CONFIGURATION: 500,
    ErrorCode.MISSING_EXTRA: 500,
    ErrorCode.INTERNAL: 500,
}


class AppError(Exception):
    """The only exception type business code raises on purpose."""

    def __init__(self, code: ErrorCode, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code.value, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}


def missing_extra(package: str, extra: str) -> AppError:
    """Error for an optional dependency that is not installed, naming the extra that provides it."""
    return AppError(
        ErrorCode.MISSING_EXTRA,
        f"optional package '{package}' is not installed: install kbqa with the '{extra}' extra "
        f"(pip install -e '.[{extra}]')",
        details={"package": package, "extra": extra},
    )

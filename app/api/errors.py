"""One place that turns errors into JSON: ``{"error": {"code": ..., "message": ...}}``."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.errors import AppError, ErrorCode

log = logging.getLogger(__name__)

_HTTP_CODES = {
    400: ErrorCode.VALIDATION,
    401: ErrorCode.UNAUTHENTICATED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.VALIDATION,
    409: ErrorCode.CONFLICT,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    422: ErrorCode.VALIDATION,
    429: ErrorCode.RATE_LIMITED,
}


def error_response(exc: AppError) -> JSONResponse:
    headers = {}
    if exc.code == ErrorCode.RATE_LIMITED and "retry_after_s" in exc.details:
        headers["Retry-After"] = str(int(exc.details["retry_after_s"]) + 1)
    if exc.code == ErrorCode.UNAUTHENTICATED:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(exc.to_dict(), status_code=exc.http_status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_: Request, exc: AppError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in exc.errors()
        ]
        return error_response(AppError(ErrorCode.VALIDATION, "the request is not valid", details={"errors": errors}))

    @app.exception_handler(DataError)
    async def _data(_: Request, exc: DataError) -> JSONResponse:
        # Values the database refuses to store, e.g. a NUL character in text on PostgreSQL: the sender's mistake.
        reason = str(exc.orig).splitlines()[0] if exc.orig else "a value cannot be stored"
        log.info("database refused a value: %s", reason)
        return error_response(
            AppError(ErrorCode.VALIDATION, f"the request contains a value the database refuses: {reason}")
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, ErrorCode.INTERNAL if exc.status_code >= 500 else ErrorCode.VALIDATION)
        err = AppError(code, str(exc.detail) if exc.detail else code.value)
        return JSONResponse(err.to_dict(), status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(AppError(ErrorCode.INTERNAL, "internal error"))

"""Browser login, logout, who-am-I and password change."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, model_validator

from app.api.auth import (
    SESSION_COOKIE,
    SESSION_TTL_S,
    Principal,
    authenticate,
    csrf_token,
    login_with_password,
    open_session,
    require,
)
from app.api.deps import get_container
from app.api.proxies import client_address
from app.services import accounts
from core.errors import AppError, ErrorCode
from core.passwords import MAX_LENGTH, password_problem
from core.settings import Settings
from core.types import Role

router = APIRouter(prefix="/api/v1/auth", tags=["session"])


class SessionCreate(BaseModel):
    """Either ``email`` and ``password`` (a user) or ``api_key`` (a key, for tools and kiosks)."""

    email: str | None = Field(default=None, max_length=254)
    password: str | None = Field(default=None, max_length=MAX_LENGTH)
    api_key: str | None = Field(default=None, max_length=200)
    #: Only needed when the same e-mail and password open accounts in several tenants.
    tenant: str | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def one_way(self) -> SessionCreate:
        if self.api_key and (self.email or self.password):
            raise ValueError("send either email and password, or api_key, not both")
        if not self.api_key and not (self.email and self.password):
            raise ValueError("send email and password, or api_key")
        return self


def session_body(principal: Principal, csrf: str) -> dict[str, Any]:
    return {
        "csrf_token": csrf,
        "role": principal.role.value,
        "tenant": principal.tenant_id,
        "kind": principal.kind,
        "name": principal.name,
        "key_name": principal.name,
    }


def put_session_cookie(response: Response, settings: Settings, cookie: str) -> None:
    """The httpOnly, SameSite=Strict session cookie (Secure outside local mode). Password, API-key and single-sign-on
    logins all open their server-side session with ``open_session`` and hand it to the browser this way."""
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_TTL_S,
        httponly=True,
        samesite="strict",
        secure=settings.environment != "local",
        path="/",
    )


def session_response(request: Request, principal: Principal) -> JSONResponse:
    """The session body with a fresh session cookie."""
    container = get_container(request)
    settings = container.settings
    cookie = open_session(container.db, principal)
    resp = JSONResponse(
        session_body(principal, csrf_token(settings.secret_key, cookie)), headers={"Cache-Control": "no-store"}
    )
    put_session_cookie(resp, settings, cookie)
    return resp


@router.post("/session", summary="Browser login with e-mail and password (or an API key); sets a session cookie")
def login(body: SessionCreate, request: Request) -> JSONResponse:
    container = get_container(request)
    limiter = getattr(container, "limiter", None)
    if limiter is not None:
        limiter.check_login(client_address(request, container.settings.api.trusted_proxies))
    if not body.api_key and not container.settings.oidc.password_login:
        raise AppError(ErrorCode.FORBIDDEN, "password login is turned off here: sign in with single sign-on")
    if body.api_key:
        principal = accounts.key_login(db=container.db, secret=body.api_key)
    else:
        principal = login_with_password(container.db, body.email or "", body.password or "", body.tenant)
    return session_response(request, principal)


@router.get("/me", summary="Who is logged in")
def me(request: Request, principal: Principal = Depends(require(Role.AGENT))) -> JSONResponse:
    cookie = request.cookies.get(SESSION_COOKIE, "")
    csrf = csrf_token(get_container(request).settings.secret_key, cookie) if principal.via_cookie else ""
    return JSONResponse(session_body(principal, csrf), headers={"Cache-Control": "no-store"})


def _ended(request: Request) -> Response:
    resp = Response(status_code=204)
    resp.delete_cookie(SESSION_COOKIE, path="/")
    return resp


@router.delete("/session", status_code=204, summary="Log out (ends this session on the server)")
def logout(request: Request) -> Response:
    authenticate(request)
    token = getattr(request.state, "session_token", None)
    if token:
        accounts.end_session(db=get_container(request).db, token=token)
    return _ended(request)


@router.delete("/sessions", status_code=204, summary="Sign out everywhere: end every session of yours")
def sign_out_everywhere(request: Request, principal: Principal = Depends(require(Role.AGENT))) -> Response:
    accounts.sign_out_everywhere(db=get_container(request).db, principal=principal)
    return _ended(request)


class PasswordChange(BaseModel):
    current_password: str = Field(min_length=1, max_length=MAX_LENGTH)
    new_password: str = Field(min_length=1, max_length=MAX_LENGTH)


@router.post("/password", summary="Change your own password (users only); ends your other sessions")
def change_password(
    body: PasswordChange, request: Request, principal: Principal = Depends(require(Role.AGENT))
) -> JSONResponse:
    if principal.kind != "user":
        raise AppError(ErrorCode.FORBIDDEN, "API keys have no password: log in as a user")
    problem = password_problem(body.new_password)
    if problem:
        raise AppError(ErrorCode.VALIDATION, problem, details={"field": "new_password"})
    accounts.change_password(
        db=get_container(request).db, principal=principal, current_password=body.current_password,
        new_password=body.new_password,
    )
    # Every session of the user has ended; this browser gets a fresh one (and a new CSRF token).
    return session_response(request, principal)

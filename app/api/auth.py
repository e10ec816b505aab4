"""Authentication and roles.

Tools send ``Authorization: Bearer <key>``. Browsers exchange a key for an httpOnly, SameSite=Strict session cookie
(``POST /api/v1/auth/session``) and must echo the CSRF token in ``X-CSRF-Token`` on every non-GET request.
Every route declares the role it needs with ``Depends(require(Role.X))``; ``tests`` enumerate the routes to check.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from app.core.db import repositories as repo
from app.core.db.models import ApiKey
from app.core.errors import AppError, ErrorCode
from app.core.logging import bind
from app.core.types import Role, SearchFilter

SESSION_COOKIE = "kbqa_session"
CSRF_HEADER = "X-CSRF-Token"
SESSION_TTL_S = 12 * 3600


@dataclass(frozen=True)
class Principal:
    tenant_id: str
    key_id: str
    key_name: str
    role: Role
    acl_groups: tuple[str, ...]
    via_cookie: bool = False

    @classmethod
    def from_key(cls, row: ApiKey, *, via_cookie: bool = False) -> Principal:
        return cls(
            tenant_id=row.tenant_id,
            key_id=row.id,
            key_name=row.name,
            role=Role(row.role),
            acl_groups=tuple(row.acl_groups or ()),
            via_cookie=via_cookie,
        )

    def search_filter(self, **kwargs: object) -> SearchFilter:
        # Admins see every document of their tenant; others see unrestricted documents and their groups' documents.
        groups = None if self.role == Role.ADMIN else self.acl_groups
        return SearchFilter(tenant_id=self.tenant_id, acl_groups=groups, **kwargs)  # type: ignore[arg-type]


def _sign(secret: str, value: str) -> str:
    return hmac.new(secret.encode(), value.encode(), hashlib.sha256).hexdigest()


def make_session_cookie(secret: str, key_id: str, now: float | None = None) -> str:
    expires = int((now or time.time()) + SESSION_TTL_S)
    payload = f"{key_id}.{expires}"
    return f"{payload}.{_sign(secret, payload)}"


def csrf_token(secret: str, cookie: str) -> str:
    return _sign(secret, "csrf:" + cookie)


def _key_id_from_cookie(secret: str, cookie: str) -> str | None:
    try:
        key_id, expires, sig = cookie.rsplit(".", 2)
    except ValueError:
        return None
    if not hmac.compare_digest(sig, _sign(secret, f"{key_id}.{expires}")):
        return None
    if not expires.isdigit() or int(expires) < time.time():
        return None
    return key_id


def authenticate(request: Request) -> Principal:
    container = request.app.state.container
    secret = container.settings.secret_key
    header = request.headers.get("authorization", "")
    with container.db.session() as s:
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AppError(ErrorCode.UNAUTHENTICATED, "use 'Authorization: Bearer <api key>'")
            row = repo.get_api_key_by_secret(session=s, secret=token.strip())
            if row is None:
                raise AppError(ErrorCode.UNAUTHENTICATED, "invalid or revoked API key")
            via_cookie = False
        else:
            cookie = request.cookies.get(SESSION_COOKIE)
            key_id = _key_id_from_cookie(secret, cookie) if cookie else None
            if not key_id:
                raise AppError(ErrorCode.UNAUTHENTICATED, "authentication required: send a Bearer API key")
            row = s.get(ApiKey, key_id)
            if row is None or row.revoked_at is not None:
                raise AppError(ErrorCode.UNAUTHENTICATED, "session expired or key revoked")
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                sent = request.headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(sent, csrf_token(secret, cookie or "")):
                    raise AppError(ErrorCode.FORBIDDEN, "missing or invalid CSRF token")
            via_cookie = True
        repo.touch_api_key(session=s, key_id=row.id)
        principal = Principal.from_key(row, via_cookie=via_cookie)
    request.state.principal = principal
    bind(tenant=principal.tenant_id, api_key_id=principal.key_id)
    return principal


def require(role: Role) -> Callable[[Request], Principal]:
    def dependency(request: Request) -> Principal:
        principal = authenticate(request)
        if not principal.role.allows(role):
            raise AppError(ErrorCode.FORBIDDEN, f"this action needs the '{role.value}' role")
        container = request.app.state.container
        limiter = getattr(container, "limiter", None)
        if limiter is not None:
            limiter.check_request(principal.key_id)
        return principal

    dependency.required_role = role  # type: ignore[attr-defined]
    return dependency

"""Authentication and roles.

Tools send ``Authorization: Bearer <key>``. Browsers log in with an e-mail and password (or an API key) at
``POST /api/v1/auth/session`` and get an httpOnly, SameSite=Strict session cookie; they must echo the CSRF token in
``X-CSRF-Token`` on every non-GET request.
Every route declares the role it needs with ``Depends(require(Role.X))``; ``tests`` enumerate the routes to check.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.orm import Session

from app.core.db import repositories as repo
from app.core.db.models import ApiKey, User, as_utc, utcnow
from app.core.db.session import Database
from app.core.errors import AppError, ErrorCode
from app.core.logging import bind
from app.core.passwords import DUMMY_HASH, hash_password, needs_rehash, verify_password
from app.core.types import Actor, Role, SearchFilter

SESSION_COOKIE = "kbqa_session"
CSRF_HEADER = "X-CSRF-Token"
SESSION_TTL_S = 12 * 3600


@dataclass(frozen=True)
class Principal:
    """Who is calling: an API key (tools, or a browser that logged in with a key) or a user (browser login with
    e-mail and password). ``id`` is the key's or the user's id; quotas, usage and conversations hang off it."""

    tenant_id: str
    kind: str  # "key" | "user"
    id: str
    name: str
    role: Role
    acl_groups: tuple[str, ...]
    via_cookie: bool = False

    @classmethod
    def from_key(cls, row: ApiKey, *, via_cookie: bool = False) -> Principal:
        return cls(
            tenant_id=row.tenant_id,
            kind="key",
            id=row.id,
            name=row.name,
            role=Role(row.role),
            acl_groups=tuple(row.acl_groups or ()),
            via_cookie=via_cookie,
        )

    @classmethod
    def from_user(cls, row: User, *, via_cookie: bool = True) -> Principal:
        return cls(
            tenant_id=row.tenant_id,
            kind="user",
            id=row.id,
            name=row.name or row.email,
            role=Role(row.role),
            acl_groups=tuple(row.acl_groups or ()),
            via_cookie=via_cookie,
        )

    @property
    def actor(self) -> Actor:
        return Actor(kind=self.kind, id=self.id, name=self.name)

    def search_filter(self, **kwargs: object) -> SearchFilter:
        # Admins see every document of their tenant; others see unrestricted documents and their groups' documents.
        groups = None if self.role == Role.ADMIN else self.acl_groups
        return SearchFilter(tenant_id=self.tenant_id, acl_groups=groups, **kwargs)  # type: ignore[arg-type]


def _sign(secret: str, value: str) -> str:
    return hmac.new(secret.encode(), value.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SessionClaims:
    kind: str
    id: str
    issued_ms: int


def make_session_cookie(secret: str, kind: str, subject_id: str, now: float | None = None) -> str:
    """``<k|u>:<id>.<issued, ms since the epoch>.<signature>``; valid for ``SESSION_TTL_S`` after it was issued."""
    payload = f"{kind[0]}:{subject_id}.{int((now or time.time()) * 1000)}"
    return f"{payload}.{_sign(secret, payload)}"


def csrf_token(secret: str, cookie: str) -> str:
    return _sign(secret, "csrf:" + cookie)


def read_session_cookie(secret: str, cookie: str, now: float | None = None) -> SessionClaims | None:
    try:
        subject, issued, sig = cookie.rsplit(".", 2)
        kind, subject_id = subject.split(":", 1)
    except ValueError:
        return None
    if not hmac.compare_digest(sig, _sign(secret, f"{subject}.{issued}")):
        return None
    if kind not in ("k", "u") or not issued.isdigit() or int(issued) / 1000 + SESSION_TTL_S < (now or time.time()):
        return None
    return SessionClaims(kind="key" if kind == "k" else "user", id=subject_id, issued_ms=int(issued))


def _principal_from_cookie(s: Session, claims: SessionClaims) -> Principal:
    if claims.kind == "key":
        key = s.get(ApiKey, claims.id)
        if key is None or key.revoked_at is not None:
            raise AppError(ErrorCode.UNAUTHENTICATED, "session expired or key revoked")
        repo.touch_api_key(session=s, key_id=key.id)
        return Principal.from_key(key, via_cookie=True)
    user = s.get(User, claims.id)
    if user is None or user.disabled_at is not None:
        raise AppError(ErrorCode.UNAUTHENTICATED, "session expired or account disabled")
    # A password change ends every session issued before it.
    if claims.issued_ms < int(as_utc(user.password_changed_at).timestamp() * 1000):
        raise AppError(ErrorCode.UNAUTHENTICATED, "session ended by a password change: log in again")
    return Principal.from_user(user)


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
            repo.touch_api_key(session=s, key_id=row.id)
            principal = Principal.from_key(row)
        else:
            cookie = request.cookies.get(SESSION_COOKIE)
            claims = read_session_cookie(secret, cookie) if cookie else None
            if claims is None:
                raise AppError(ErrorCode.UNAUTHENTICATED, "authentication required: log in or send a Bearer API key")
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                sent = request.headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(sent, csrf_token(secret, cookie or "")):
                    raise AppError(ErrorCode.FORBIDDEN, "missing or invalid CSRF token")
            principal = _principal_from_cookie(s, claims)
    request.state.principal = principal
    bind(tenant=principal.tenant_id, actor=f"{principal.kind}:{principal.id}")
    return principal


def require(role: Role) -> Callable[[Request], Principal]:
    def dependency(request: Request) -> Principal:
        principal = authenticate(request)
        if not principal.role.allows(role):
            raise AppError(ErrorCode.FORBIDDEN, f"this action needs the '{role.value}' role")
        container = request.app.state.container
        limiter = getattr(container, "limiter", None)
        if limiter is not None:
            limiter.check_request(principal.id)
        return principal

    dependency.required_role = role  # type: ignore[attr-defined]
    return dependency


LOCK_AFTER_FAILURES = 5
LOCK_BASE_S = 30
LOCK_MAX_S = 15 * 60


def login_with_password(db: Database, email: str, password: str) -> Principal:
    """The principal for this e-mail and password, or an error; audited either way.

    After ``LOCK_AFTER_FAILURES`` wrong passwords in a row the account is locked for 30 s, doubling with each further
    failure up to 15 min (429 with Retry-After). Unknown e-mails cost the same scrypt work as known ones, so timing
    does not tell which e-mails exist, and both get the same message."""
    failure: AppError | None = None
    with db.session() as s:
        user = repo.get_user_by_email(session=s, email=email)
        now = utcnow()
        if user is None:
            verify_password(password, DUMMY_HASH)
            raise AppError(ErrorCode.UNAUTHENTICATED, "invalid e-mail or password")
        principal = Principal.from_user(user)
        if user.locked_until is not None and as_utc(user.locked_until) > now:
            wait_s = (as_utc(user.locked_until) - now).total_seconds()
            failure = AppError(
                ErrorCode.RATE_LIMITED,
                f"too many failed logins for this account: try again in {int(wait_s) + 1} s",
                details={"retry_after_s": wait_s},
            )
        elif not verify_password(password, user.password_hash):
            user.failed_logins += 1
            if user.failed_logins >= LOCK_AFTER_FAILURES:
                lock_s = min(LOCK_MAX_S, LOCK_BASE_S * 2 ** (user.failed_logins - LOCK_AFTER_FAILURES))
                user.locked_until = now + dt.timedelta(seconds=lock_s)
            failure = AppError(ErrorCode.UNAUTHENTICATED, "invalid e-mail or password")
        elif user.disabled_at is not None:
            failure = AppError(ErrorCode.FORBIDDEN, "this account is disabled: ask an administrator")
        if failure is not None:
            repo.audit(
                session=s,
                tenant_id=user.tenant_id,
                actor=principal.actor,
                action="session.login_failed",
                detail={"reason": failure.code.value, "failed_logins": user.failed_logins},
            )
        else:
            user.failed_logins = 0
            user.locked_until = None
            user.last_login_at = now
            if needs_rehash(user.password_hash):
                user.password_hash = hash_password(password)
            repo.audit(session=s, tenant_id=user.tenant_id, actor=principal.actor, action="session.login")
    if failure is not None:
        raise failure
    return principal

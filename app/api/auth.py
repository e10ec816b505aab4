"""Authentication and roles.

Tools send ``Authorization: Bearer <key>``. Browsers log in with an e-mail and password (or an API key) at
``POST /api/v1/auth/session`` and get an httpOnly, SameSite=Strict session cookie that carries only the opaque token of
a server-side session (table ``sessions``); they must echo the CSRF token in ``X-CSRF-Token`` on every non-GET request.
Every route declares the role it needs with ``Depends(require(Role.X))``; ``tests`` enumerate the routes to check.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Callable

from fastapi import Request
from sqlalchemy.orm import Session

from core.db import repositories as repo
from core.db.models import ApiKey, User, as_utc, utcnow
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.logging import bind
from core.passwords import DUMMY_HASH, hash_password, needs_rehash, verify_password
from core.principal import Principal
from core.types import Role

SESSION_COOKIE = "kbqa_session"
CSRF_HEADER = "X-CSRF-Token"
#: A session ends this long after login at the latest (sooner by logout, password change, disable, revocation).
SESSION_TTL_S = 12 * 3600


def _sign(secret: str, value: str) -> str:
    return hmac.new(secret.encode(), value.encode(), hashlib.sha256).hexdigest()


def csrf_token(secret: str, cookie: str) -> str:
    """The CSRF token of a session: an HMAC of its cookie token (so it cannot be derived without the secret key)."""
    return _sign(secret, "csrf:" + cookie)


def open_session(db: Database, principal: Principal) -> str:
    """Store a new server-side session for ``principal``; returns the opaque token the cookie carries."""
    with db.session() as s:
        return repo.create_session(
            session=s,
            tenant_id=principal.tenant_id,
            principal_kind=principal.kind,
            principal_id=principal.id,
            ttl_s=SESSION_TTL_S,
        )


def _principal_from_session(s: Session, token: str) -> Principal:
    row = repo.get_live_session(session=s, token=token, ttl_s=SESSION_TTL_S)
    if row is None:
        raise AppError(ErrorCode.UNAUTHENTICATED, "session ended or expired: log in again")
    if row.principal_kind == "key":
        key = s.get(ApiKey, row.principal_id)
        if key is None or key.revoked_at is not None:
            raise AppError(ErrorCode.UNAUTHENTICATED, "session expired or key revoked")
        repo.touch_api_key(session=s, key_id=key.id)
        return Principal.from_key(key, via_cookie=True)
    user = s.get(User, row.principal_id)
    if user is None or user.disabled_at is not None:
        raise AppError(ErrorCode.UNAUTHENTICATED, "session expired or account disabled")
    # Password changes revoke sessions; this also refuses any session created before the last change.
    if as_utc(row.created_at) < as_utc(user.password_changed_at):
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
            cookie = request.cookies.get(SESSION_COOKIE, "")
            if not cookie:
                raise AppError(ErrorCode.UNAUTHENTICATED, "authentication required: log in or send a Bearer API key")
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                sent = request.headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(sent, csrf_token(secret, cookie)):
                    raise AppError(ErrorCode.FORBIDDEN, "missing or invalid CSRF token")
            principal = _principal_from_session(s, cookie)
            request.state.session_token = cookie
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


def _lock_after_failure(user: User, now: dt.datetime) -> None:
    user.failed_logins += 1
    if user.failed_logins >= LOCK_AFTER_FAILURES:
        lock_s = min(LOCK_MAX_S, LOCK_BASE_S * 2 ** (user.failed_logins - LOCK_AFTER_FAILURES))
        user.locked_until = now + dt.timedelta(seconds=lock_s)


def login_with_password(db: Database, email: str, password: str, tenant: str | None = None) -> Principal:
    """The principal for this e-mail and password, or an error; audited either way.

    An address may have an account in several tenants (unique per tenant): the account whose password matches is the
    one; ``tenant`` picks among several that match. After ``LOCK_AFTER_FAILURES`` wrong passwords in a row an account
    is locked for 30 s, doubling with each further failure up to 15 min. Unknown e-mails, wrong passwords and locked
    accounts get the same answer (401, same message) after the same scrypt work, so neither timing nor wording tells
    which e-mails exist or which accounts are locked; while locked, even the right password is refused that way."""
    invalid = AppError(ErrorCode.UNAUTHENTICATED, "invalid e-mail or password")
    failure: AppError | None = None
    with db.session() as s:
        users = [u for u in repo.list_users_by_email(session=s, email=email) if tenant is None or u.tenant_id == tenant]
        if not users:
            verify_password(password, DUMMY_HASH)
            raise invalid
        now = utcnow()
        matched: list[User] = []
        for user in users:
            correct = verify_password(password, user.password_hash)  # always: a locked account costs the same work
            locked = user.locked_until is not None and as_utc(user.locked_until) > now
            if correct and not locked:
                matched.append(user)
                continue
            if not correct and not locked:
                _lock_after_failure(user, now)
            repo.audit(
                session=s,
                tenant_id=user.tenant_id,
                actor=Principal.from_user(user).actor,
                action="session.login_failed",
                detail={"reason": "locked" if locked else "wrong_password", "failed_logins": user.failed_logins},
            )
        if not matched:
            failure = invalid
        elif len(matched) > 1:
            # Only someone who knows the password of each account learns that the address is used in several tenants.
            failure = AppError(
                ErrorCode.CONFLICT,
                "this e-mail and password open accounts in several tenants: send 'tenant' as well",
                details={"tenants": sorted(u.tenant_id for u in matched)},
            )
        else:
            user = matched[0]
            principal = Principal.from_user(user)
            if user.disabled_at is not None:
                # Only someone who knows the password learns that the account is disabled.
                failure = AppError(ErrorCode.FORBIDDEN, "this account is disabled: ask an administrator")
                repo.audit(
                    session=s,
                    tenant_id=user.tenant_id,
                    actor=principal.actor,
                    action="session.login_failed",
                    detail={"reason": "disabled", "failed_logins": user.failed_logins},
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

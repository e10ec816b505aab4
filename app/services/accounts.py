"""Users, API keys, sessions, usage and the audit log of one tenant (the admin's side of accounts).

Every function is keyword-only, opens its own transaction and audits what it changes. Inputs are already validated
(the API's request models); outputs are the pydantic views the API returns as its ``response_model``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, cast

from pydantic import BaseModel

from core.db import repositories as repo
from core.db.models import ApiKey, AuditEvent, User, utcnow
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.passwords import verify_password
from core.principal import Principal
from core.types import Role


class UserView(BaseModel):
    id: str
    email: str
    name: str
    role: Role
    acl_groups: list[str]
    created_at: dt.datetime
    last_login_at: dt.datetime | None
    disabled: bool

    @classmethod
    def of(cls, u: User) -> UserView:
        return cls(
            id=u.id, email=u.email, name=u.name, role=Role(u.role), acl_groups=list(u.acl_groups or []),
            created_at=u.created_at, last_login_at=u.last_login_at, disabled=u.disabled_at is not None,
        )


class UserList(BaseModel):
    users: list[UserView]


class KeyView(BaseModel):
    id: str
    name: str
    role: Role
    prefix: str
    acl_groups: list[str]
    created_at: dt.datetime
    last_used_at: dt.datetime | None
    revoked: bool

    @classmethod
    def of(cls, k: ApiKey) -> KeyView:
        return cls(
            id=k.id, name=k.name, role=Role(k.role), prefix=k.prefix, acl_groups=list(k.acl_groups or []),
            created_at=k.created_at, last_used_at=k.last_used_at, revoked=k.revoked_at is not None,
        )


class KeyList(BaseModel):
    keys: list[KeyView]


class KeyCreated(KeyView):
    key: str  # the secret, shown once


ActorKind = Literal["user", "key", "system"]


class UsageRow(BaseModel):
    actor_kind: ActorKind
    actor_id: str
    actor_name: str
    day: dt.date
    requests: int
    prompt_tokens: int
    completion_tokens: int


class UsageList(BaseModel):
    usage: list[UsageRow]


class AuditEventView(BaseModel):
    id: int
    created_at: dt.datetime
    actor_kind: ActorKind
    actor_id: str | None
    actor_name: str
    action: str
    target: str
    detail: dict[str, Any]

    @classmethod
    def of(cls, e: AuditEvent) -> AuditEventView:
        return cls(
            id=e.id, created_at=e.created_at, actor_kind=cast(ActorKind, e.actor_kind), actor_id=e.actor_id,
            actor_name=e.actor_name, action=e.action, target=e.target, detail=e.detail or {},
        )


class AuditPage(BaseModel):
    events: list[AuditEventView]
    next_before: int | None


# --- users ---------------------------------------------------------------------------------------------------------


def list_users(*, db: Database, principal: Principal) -> UserList:
    with db.session() as s:
        return UserList(users=[UserView.of(u) for u in repo.list_users(session=s, tenant_id=principal.tenant_id)])


def create_user(
    *, db: Database, principal: Principal, email: str, name: str, role: Role, password: str, acl_groups: list[str]
) -> UserView:
    with db.session() as s:
        row = repo.create_user(
            session=s, tenant_id=principal.tenant_id, email=email, name=name, role=role, password=password,
            acl_groups=acl_groups,
        )
        repo.audit(
            session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="user.create", target=row.id,
            detail={"email": row.email, "role": row.role, "acl_groups": row.acl_groups},
        )
        return UserView.of(row)


def update_user(
    *,
    db: Database,
    principal: Principal,
    user_id: str,
    name: str | None = None,
    role: Role | None = None,
    acl_groups: list[str] | None = None,
    disabled: bool | None = None,
    password: str | None = None,
) -> UserView:
    """Change what is given; an admin can neither demote nor disable themselves, nor the tenant's last admin.
    Disabling a user or resetting their password ends their sessions."""
    with db.session() as s:
        row = repo.get_user(session=s, tenant_id=principal.tenant_id, user_id=user_id)
        changes: dict[str, Any] = {}
        demotes = role is not None and role != Role.ADMIN and row.role == Role.ADMIN.value
        disables = disabled is True and row.disabled_at is None
        if row.id == principal.id and (demotes or disables):
            raise AppError(ErrorCode.CONFLICT, "you cannot demote or disable yourself: ask another administrator")
        last_admin = (demotes or disables) and row.role == Role.ADMIN.value and row.disabled_at is None
        if last_admin and repo.count_active_admins(session=s, tenant_id=principal.tenant_id) <= 1:
            raise AppError(ErrorCode.CONFLICT, "the tenant would have no active admin user left")
        if name is not None and name != row.name:
            row.name, changes["name"] = name, name
        if role is not None and role.value != row.role:
            row.role, changes["role"] = role.value, role.value
        if acl_groups is not None and acl_groups != row.acl_groups:
            row.acl_groups, changes["acl_groups"] = acl_groups, acl_groups
        if disabled is not None and disabled != (row.disabled_at is not None):
            row.disabled_at = utcnow() if disabled else None
            changes["disabled"] = disabled
            if disabled:
                repo.revoke_sessions(session=s, principal_id=row.id)
        if password is not None:
            # An administrator's reset also ends the user's sessions.
            repo.set_user_password(row, password, session=s, unlock=True)
            changes["password"] = "reset"
        if changes:
            repo.audit(
                session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="user.update", target=row.id,
                detail={"email": row.email, **changes},
            )
        s.flush()
        return UserView.of(row)


def end_user_sessions(*, db: Database, principal: Principal, user_id: str) -> None:
    with db.session() as s:
        row = repo.get_user(session=s, tenant_id=principal.tenant_id, user_id=user_id)
        n = repo.revoke_sessions(session=s, principal_id=row.id)
        repo.audit(
            session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="session.revoke_all",
            target=row.id, detail={"email": row.email, "sessions": n},
        )


# --- sessions --------------------------------------------------------------------------------------------------


def key_login(*, db: Database, secret: str) -> Principal:
    """The principal of an API key used to log in a browser (kiosks, tools with a UI); audited."""
    with db.session() as s:
        row = repo.get_api_key_by_secret(session=s, secret=secret.strip())
        if row is None:
            raise AppError(ErrorCode.UNAUTHENTICATED, "invalid or revoked API key")
        principal = Principal.from_key(row, via_cookie=True)
        repo.audit(session=s, tenant_id=row.tenant_id, actor=principal.actor, action="session.login")
        return principal


def end_session(*, db: Database, token: str) -> None:
    with db.session() as s:
        repo.revoke_session(session=s, token=token)


def sign_out_everywhere(*, db: Database, principal: Principal) -> None:
    with db.session() as s:
        n = repo.revoke_sessions(session=s, principal_id=principal.id)
        repo.audit(
            session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="session.revoke_all",
            target=principal.id, detail={"sessions": n},
        )


def change_password(*, db: Database, principal: Principal, current_password: str, new_password: str) -> None:
    """A user's own password change (the new one already checked); ends every session of the user."""
    if principal.kind != "user":
        raise AppError(ErrorCode.FORBIDDEN, "API keys have no password: log in as a user")
    with db.session() as s:
        users = [u for u in repo.list_users(session=s, tenant_id=principal.tenant_id) if u.id == principal.id]
        user = users[0] if users else None
        if user is None or not verify_password(current_password, user.password_hash):
            raise AppError(ErrorCode.UNAUTHENTICATED, "the current password is wrong")
        repo.set_user_password(user, new_password, session=s)
        repo.audit(session=s, tenant_id=user.tenant_id, actor=principal.actor, action="user.password_change")


# --- API keys and usage --------------------------------------------------------------------------------------------


def list_keys(*, db: Database, principal: Principal) -> KeyList:
    with db.session() as s:
        return KeyList(keys=[KeyView.of(k) for k in repo.list_api_keys(session=s, tenant_id=principal.tenant_id)])


def create_key(*, db: Database, principal: Principal, name: str, role: Role, acl_groups: list[str]) -> KeyCreated:
    with db.session() as s:
        row, secret = repo.create_api_key(
            session=s, tenant_id=principal.tenant_id, name=name, role=role, acl_groups=acl_groups
        )
        repo.audit(
            session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="key.create", target=row.id,
            detail={"name": name, "role": role.value},
        )
        return KeyCreated(**KeyView.of(row).model_dump(), key=secret)


def revoke_key(*, db: Database, principal: Principal, key_id: str) -> None:
    with db.session() as s:
        repo.revoke_api_key(session=s, tenant_id=principal.tenant_id, key_id=key_id)
        repo.audit(session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="key.revoke", target=key_id)


def usage(*, db: Database, principal: Principal) -> UsageList:
    with db.session() as s:
        rows = repo.list_usage(session=s, tenant_id=principal.tenant_id)
        return UsageList(
            usage=[
                UsageRow(
                    actor_kind=cast(ActorKind, u.actor_kind), actor_id=u.actor_id, actor_name=name, day=u.day,
                    requests=u.requests, prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
                )
                for u, name in rows
            ]
        )


def audit_log(
    *, db: Database, principal: Principal, action: str | None, actor: str | None, before: int | None, limit: int
) -> AuditPage:
    with db.session() as s:
        events = repo.list_audit(
            session=s, tenant_id=principal.tenant_id, action=action, actor_id=actor, before=before, limit=limit
        )
        return AuditPage(
            events=[AuditEventView.of(e) for e in events],
            next_before=events[-1].id if len(events) == limit else None,
        )

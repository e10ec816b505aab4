"""Users and roles, and the audit log (admin only)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field, field_validator

from app.api.auth import Principal, require
from core.db import repositories as repo
from core.db.models import AuditEvent, User, utcnow
from core.errors import AppError, ErrorCode
from core.passwords import MAX_LENGTH, password_problem
from core.types import Role, clean_labels

router = APIRouter(prefix="/api/v1", tags=["users"])

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")


def user_json(u: User) -> dict[str, Any]:
    return {
        "id": u.id,
        "email": u.email,
        "name": u.name,
        "role": u.role,
        "acl_groups": u.acl_groups,
        "created_at": u.created_at,
        "last_login_at": u.last_login_at,
        "disabled": u.disabled_at is not None,
    }


def _email(value: str) -> str:
    value = value.strip().lower()
    if not _EMAIL.match(value):
        raise ValueError("not an e-mail address")
    return value


def _password(value: str) -> str:
    problem = password_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _groups(value: list[str]) -> list[str]:
    return clean_labels(value, "ACL groups")


class UserCreate(BaseModel):
    email: str = Field(max_length=254)
    name: str = Field(default="", max_length=200)
    role: Role = Role.AGENT
    acl_groups: list[str] = Field(default_factory=list, max_length=50)
    password: str = Field(max_length=MAX_LENGTH)

    _v_email = field_validator("email")(_email)
    _v_password = field_validator("password")(_password)
    _v_groups = field_validator("acl_groups")(_groups)


class UserUpdate(BaseModel):
    name: str | None = Field(default=None, max_length=200)
    role: Role | None = None
    acl_groups: list[str] | None = Field(default=None, max_length=50)
    disabled: bool | None = None
    password: str | None = Field(default=None, max_length=MAX_LENGTH)

    @field_validator("password")
    @classmethod
    def _v_password(cls, value: str | None) -> str | None:
        return None if value is None else _password(value)

    @field_validator("acl_groups")
    @classmethod
    def _v_groups(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _groups(value)


@router.get("/users", summary="List the users of your tenant")
def list_users(request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        return {"users": [user_json(u) for u in repo.list_users(session=s, tenant_id=principal.tenant_id)]}


@router.post("/users", status_code=201, summary="Create a user with an initial password")
def create_user(
    body: UserCreate, request: Request, principal: Principal = Depends(require(Role.ADMIN))
) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        row = repo.create_user(
            session=s,
            tenant_id=principal.tenant_id,
            email=body.email,
            name=body.name,
            role=body.role,
            password=body.password,
            acl_groups=body.acl_groups,
        )
        repo.audit(
            session=s,
            tenant_id=principal.tenant_id,
            actor=principal.actor,
            action="user.create",
            target=row.id,
            detail={"email": row.email, "role": row.role, "acl_groups": row.acl_groups},
        )
        return user_json(row)


@router.patch("/users/{user_id}", summary="Change a user's name, role, groups, password, or disable/enable them")
def update_user(
    user_id: str, body: UserUpdate, request: Request, principal: Principal = Depends(require(Role.ADMIN))
) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        row = repo.get_user(session=s, tenant_id=principal.tenant_id, user_id=user_id)
        changes: dict[str, Any] = {}
        demotes = body.role is not None and body.role != Role.ADMIN and row.role == Role.ADMIN.value
        disables = body.disabled is True and row.disabled_at is None
        if row.id == principal.id and (demotes or disables):
            raise AppError(ErrorCode.CONFLICT, "you cannot demote or disable yourself: ask another administrator")
        last_admin = (demotes or disables) and row.role == Role.ADMIN.value and row.disabled_at is None
        if last_admin and repo.count_active_admins(session=s, tenant_id=principal.tenant_id) <= 1:
            raise AppError(ErrorCode.CONFLICT, "the tenant would have no active admin user left")
        if body.name is not None and body.name != row.name:
            row.name, changes["name"] = body.name, body.name
        if body.role is not None and body.role.value != row.role:
            row.role, changes["role"] = body.role.value, body.role.value
        if body.acl_groups is not None and body.acl_groups != row.acl_groups:
            row.acl_groups, changes["acl_groups"] = body.acl_groups, body.acl_groups
        if body.disabled is not None and body.disabled != (row.disabled_at is not None):
            row.disabled_at = utcnow() if body.disabled else None
            changes["disabled"] = body.disabled
            if body.disabled:
                repo.revoke_sessions(session=s, principal_id=row.id)
        if body.password is not None:
            # An administrator's reset also ends the user's sessions.
            repo.set_user_password(row, body.password, session=s, unlock=True)
            changes["password"] = "reset"
        if changes:
            repo.audit(
                session=s,
                tenant_id=principal.tenant_id,
                actor=principal.actor,
                action="user.update",
                target=row.id,
                detail={"email": row.email, **changes},
            )
        s.flush()
        return user_json(row)


@router.delete("/users/{user_id}/sessions", status_code=204, summary="Sign a user out everywhere")
def end_user_sessions(user_id: str, request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> Response:
    with request.app.state.container.db.session() as s:
        row = repo.get_user(session=s, tenant_id=principal.tenant_id, user_id=user_id)
        n = repo.revoke_sessions(session=s, principal_id=row.id)
        repo.audit(
            session=s,
            tenant_id=principal.tenant_id,
            actor=principal.actor,
            action="session.revoke_all",
            target=row.id,
            detail={"email": row.email, "sessions": n},
        )
    return Response(status_code=204)


def audit_json(e: AuditEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "created_at": e.created_at,
        "actor_kind": e.actor_kind,
        "actor_id": e.actor_id,
        "actor_name": e.actor_name,
        "action": e.action,
        "target": e.target,
        "detail": e.detail,
    }


@router.get("/audit", summary="The audit log of your tenant, newest first")
def audit_log(
    request: Request,
    action: str | None = Query(default=None, max_length=64, description="action prefix, e.g. 'document.' or 'ask'"),
    actor: str | None = Query(default=None, max_length=32, description="an API key id or user id"),
    before: int | None = Query(default=None, ge=1, le=2**62, description="page: events with a smaller id"),
    limit: int = Query(default=50, ge=1, le=500),
    principal: Principal = Depends(require(Role.ADMIN)),
) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        events = repo.list_audit(
            session=s, tenant_id=principal.tenant_id, action=action, actor_id=actor, before=before, limit=limit
        )
        return {
            "events": [audit_json(e) for e in events],
            "next_before": events[-1].id if len(events) == limit else None,
        }

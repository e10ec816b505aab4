"""Users and roles, and the audit log (admin only)."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response
from pydantic import BaseModel, Field, field_validator

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.container import Container
from app.services import accounts
from app.services.accounts import AuditPage, UserList, UserView
from core.passwords import MAX_LENGTH, password_problem
from core.types import Role, clean_labels

router = APIRouter(prefix="/api/v1", tags=["users"])

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")


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


@router.get("/users", summary="List the users of your tenant", response_model=UserList)
def list_users(
    principal: Principal = Depends(require(Role.ADMIN)), container: Container = Depends(get_container)
) -> UserList:
    return accounts.list_users(db=container.db, principal=principal)


@router.post("/users", status_code=201, summary="Create a user with an initial password", response_model=UserView)
def create_user(
    body: UserCreate, principal: Principal = Depends(require(Role.ADMIN)), container: Container = Depends(get_container)
) -> UserView:
    return accounts.create_user(
        db=container.db, principal=principal, email=body.email, name=body.name, role=body.role,
        password=body.password, acl_groups=body.acl_groups,
    )


@router.patch(
    "/users/{user_id}",
    summary="Change a user's name, role, groups, password, or disable/enable them",
    response_model=UserView,
)
def update_user(
    user_id: str,
    body: UserUpdate,
    principal: Principal = Depends(require(Role.ADMIN)),
    container: Container = Depends(get_container),
) -> UserView:
    return accounts.update_user(
        db=container.db, principal=principal, user_id=user_id, name=body.name, role=body.role,
        acl_groups=body.acl_groups, disabled=body.disabled, password=body.password,
    )


@router.delete("/users/{user_id}/sessions", status_code=204, summary="Sign a user out everywhere")
def end_user_sessions(
    user_id: str, principal: Principal = Depends(require(Role.ADMIN)), container: Container = Depends(get_container)
) -> Response:
    accounts.end_user_sessions(db=container.db, principal=principal, user_id=user_id)
    return Response(status_code=204)


@router.get("/audit", summary="The audit log of your tenant, newest first", response_model=AuditPage)
def audit_log(
    action: str | None = Query(default=None, max_length=64, description="action prefix, e.g. 'document.' or 'ask'"),
    actor: str | None = Query(default=None, max_length=32, description="an API key id or user id"),
    before: int | None = Query(default=None, ge=1, le=2**62, description="page: events with a smaller id"),
    limit: int = Query(default=50, ge=1, le=500),
    principal: Principal = Depends(require(Role.ADMIN)),
    container: Container = Depends(get_container),
) -> AuditPage:
    return accounts.audit_log(
        db=container.db, principal=principal, action=action, actor=actor, before=before, limit=limit
    )

"""API keys and usage per key or user."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from pydantic import BaseModel, Field, field_validator

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.container import Container
from app.services import accounts
from app.services.accounts import KeyCreated, KeyList, UsageList
from core.types import Role, clean_labels

router = APIRouter(prefix="/api/v1", tags=["admin"])


class KeyCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    role: Role = Role.AGENT
    acl_groups: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("acl_groups")
    @classmethod
    def _v_groups(cls, value: list[str]) -> list[str]:
        return clean_labels(value, "ACL groups")


@router.get("/keys", summary="List API keys of your tenant", response_model=KeyList)
def list_keys(
    principal: Principal = Depends(require(Role.ADMIN)), container: Container = Depends(get_container)
) -> KeyList:
    return accounts.list_keys(db=container.db, principal=principal)


@router.post(
    "/keys", status_code=201, summary="Create an API key (the secret is shown once)", response_model=KeyCreated
)
def create_key(
    body: KeyCreate,
    response: Response,
    principal: Principal = Depends(require(Role.ADMIN)),
    container: Container = Depends(get_container),
) -> KeyCreated:
    response.headers["Cache-Control"] = "no-store"
    return accounts.create_key(
        db=container.db, principal=principal, name=body.name, role=body.role, acl_groups=body.acl_groups
    )


@router.delete("/keys/{key_id}", status_code=204, summary="Revoke an API key")
def revoke_key(
    key_id: str, principal: Principal = Depends(require(Role.ADMIN)), container: Container = Depends(get_container)
) -> Response:
    accounts.revoke_key(db=container.db, principal=principal, key_id=key_id)
    return Response(status_code=204)


@router.get(
    "/usage", summary="Requests and tokens per API key or user per day (last 90 days)", response_model=UsageList
)
def usage(
    principal: Principal = Depends(require(Role.ADMIN)), container: Container = Depends(get_container)
) -> UsageList:
    return accounts.usage(db=container.db, principal=principal)

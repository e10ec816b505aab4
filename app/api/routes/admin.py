"""API keys and usage per key or user."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, field_validator

from app.api.auth import Principal, require
from core.db import repositories as repo
from core.types import Role, clean_labels

router = APIRouter(prefix="/api/v1", tags=["admin"])


def key_json(k: Any) -> dict[str, Any]:
    return {
        "id": k.id,
        "name": k.name,
        "role": k.role,
        "prefix": k.prefix,
        "acl_groups": k.acl_groups,
        "created_at": k.created_at,
        "last_used_at": k.last_used_at,
        "revoked": k.revoked_at is not None,
    }


class KeyCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    role: Role = Role.AGENT
    acl_groups: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("acl_groups")
    @classmethod
    def _v_groups(cls, value: list[str]) -> list[str]:
        return clean_labels(value, "ACL groups")


@router.get("/keys", summary="List API keys of your tenant")
def list_keys(request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        return {"keys": [key_json(k) for k in repo.list_api_keys(session=s, tenant_id=principal.tenant_id)]}


@router.post("/keys", status_code=201, summary="Create an API key (the secret is shown once)")
def create_key(body: KeyCreate, request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> JSONResponse:
    with request.app.state.container.db.session() as s:
        row, secret = repo.create_api_key(
            session=s, tenant_id=principal.tenant_id, name=body.name, role=body.role, acl_groups=body.acl_groups
        )
        repo.audit(
            session=s,
            tenant_id=principal.tenant_id,
            actor=principal.actor,
            action="key.create",
            target=row.id,
            detail={"name": body.name, "role": body.role.value},
        )
        return JSONResponse(
            jsonable_encoder({**key_json(row), "key": secret}), status_code=201, headers={"Cache-Control": "no-store"}
        )


@router.delete("/keys/{key_id}", status_code=204, summary="Revoke an API key")
def revoke_key(key_id: str, request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> Response:
    with request.app.state.container.db.session() as s:
        repo.revoke_api_key(session=s, tenant_id=principal.tenant_id, key_id=key_id)
        repo.audit(session=s, tenant_id=principal.tenant_id, actor=principal.actor, action="key.revoke", target=key_id)
    return Response(status_code=204)


@router.get("/usage", summary="Requests and tokens per API key or user per day (last 90 days)")
def usage(request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        rows = repo.list_usage(session=s, tenant_id=principal.tenant_id)
        return {
            "usage": [
                {
                    "actor_kind": u.actor_kind,
                    "actor_id": u.actor_id,
                    "actor_name": name,
                    "day": u.day,
                    "requests": u.requests,
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                }
                for u, name in rows
            ]
        }

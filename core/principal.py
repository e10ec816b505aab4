"""Who is calling: the authenticated principal every service call is made for."""

from __future__ import annotations

from dataclasses import dataclass

from core.db.models import ApiKey, User
from core.types import Actor, Role, SearchFilter


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

    @property
    def acl_scope(self) -> tuple[str, ...] | None:
        """The groups that limit which documents this principal sees, their metadata as well as their content, and (for
        editors) which ones they may manage: ``None`` for admins (every document of the tenant)."""
        return None if self.role == Role.ADMIN else self.acl_groups

    def search_filter(self, **kwargs: object) -> SearchFilter:
        # Admins see every document of their tenant; others see unrestricted documents and their groups' documents.
        return SearchFilter(tenant_id=self.tenant_id, acl_groups=self.acl_scope, **kwargs)  # type: ignore[arg-type]

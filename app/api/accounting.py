"""Accounting for one finished answer: metrics, token usage per key or user, and its token quota."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.api.auth import Principal
from core.db import repositories as repo


def account_answer(
    container: Any,
    principal: Principal,
    done: dict[str, Any],
    *,
    session: Session | None = None,
    latency_ms: float = 0.0,
) -> None:
    """Record a ``done`` event's usage (in ``session`` if given, else in a transaction of its own)."""
    usage = done.get("usage") or {}
    completion = int(usage.get("completion_tokens", 0))
    container.metrics.observe_answer(done)

    def record(s: Session) -> None:
        repo.record_usage(
            session=s,
            tenant_id=principal.tenant_id,
            actor=principal.actor,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=completion,
            latency_ms=latency_ms,
        )

    if session is not None:
        record(session)
    else:
        with container.db.session() as s:
            record(s)
    container.limiter.spend_tokens(principal.id, completion)

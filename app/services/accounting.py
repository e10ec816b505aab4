"""Accounting for one finished answer: metrics, token usage per key or user, and its token quota."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.generation.events import Done
from app.services.metrics import Metrics
from app.services.quotas import QuotaLimiter
from core.db import repositories as repo
from core.db.session import Database
from core.principal import Principal


def account_answer(
    *,
    db: Database,
    metrics: Metrics,
    limiter: QuotaLimiter,
    principal: Principal,
    done: Done,
    session: Session | None = None,
    latency_ms: float = 0.0,
) -> None:
    """Record a ``done`` event's usage (in ``session`` if given, else in a transaction of its own)."""
    completion = int(done.usage.get("completion_tokens", 0))
    metrics.observe_answer(done)

    def record(s: Session) -> None:
        repo.record_usage(
            session=s,
            tenant_id=principal.tenant_id,
            actor=principal.actor,
            prompt_tokens=int(done.usage.get("prompt_tokens", 0)),
            completion_tokens=completion,
            latency_ms=latency_ms,
        )

    if session is not None:
        record(session)
    else:
        with db.session() as s:
            record(s)
    limiter.spend_tokens(principal.id, completion)

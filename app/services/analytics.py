"""Usage analytics for administrators, from what the product already records about each answer: when it was asked,
how it ended (``outcome``), its first-token and total latency, and the documents it cited. ``record_answer`` copies
these out of the assistant message's meta and citations into two narrow, indexed tables (``answer_stats``,
``answer_citations``) as the answer is stored, so no report has to parse JSON per row. Each report is one keyword-only
function taking a session; the SQL is the same on SQLite and PostgreSQL (PostgreSQL computes percentiles in the
database, SQLite in Python).

``benchmarks/bench_analytics.py`` times every report on 100,000 logged questions in PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import Any

from sqlalchemy import Date, cast, func, select
from sqlalchemy.orm import Session

from core.db.models import AnswerCitation, AnswerStat, Document, Message, TokenUsage, utcnow

OUTCOMES = ("answered", "partial", "not_found")
PERCENTILES = (50, 90, 95, 99)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def record_answer(*, session: Session, tenant_id: str, message: Message) -> None:
    """Copy a stored assistant message's outcome, latencies and cited documents into the analytics tables."""
    meta = message.meta or {}
    timings = meta.get("timings_ms") or {}
    created = message.created_at or utcnow()
    session.add(AnswerStat(
        message_id=message.id, tenant_id=tenant_id, created_at=created,
        outcome=str(meta.get("outcome") or ("not_found" if meta.get("refused") else "answered"))[:16],
        first_token_ms=_number(timings.get("first_token")), total_ms=_number(timings.get("total")),
    ))
    docs = {str(c["document_id"]) for c in message.citations or [] if isinstance(c, dict) and c.get("document_id")}
    session.add_all(
        AnswerCitation(message_id=message.id, document_id=str(d)[:32], tenant_id=tenant_id, created_at=created)
        for d in sorted(docs)
    )
    session.flush()


def _since(days: int, now: dt.datetime | None) -> dt.datetime:
    return (now or utcnow()) - dt.timedelta(days=days)


def _pg(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _day(session: Session, column: Any) -> Any:
    return cast(func.timezone("UTC", column), Date) if _pg(session) else func.date(column)


def questions_per_day(
    *, session: Session, tenant_id: str, days: int = 30, now: dt.datetime | None = None
) -> list[dict[str, Any]]:
    """Questions answered per UTC day (days without questions included as 0), with tokens from ``token_usage``."""
    since = _since(days, now)
    day = _day(session, AnswerStat.created_at).label("day")
    stmt = (
        select(day, func.count())
        .where(AnswerStat.tenant_id == tenant_id, AnswerStat.created_at >= since)
        .group_by(day)
    )
    counts = {str(d): int(n) for d, n in session.execute(stmt)}
    tokens = {
        str(d): int(p or 0) + int(c or 0)
        for d, p, c in session.execute(
            select(TokenUsage.day, func.sum(TokenUsage.prompt_tokens), func.sum(TokenUsage.completion_tokens))
            .where(TokenUsage.tenant_id == tenant_id, TokenUsage.day >= since.date())
            .group_by(TokenUsage.day)
        )
    }
    end = (now or utcnow()).date()
    out = []
    for i in range(days, -1, -1):
        d = (end - dt.timedelta(days=i)).isoformat()
        out.append({"day": d, "questions": counts.get(d, 0), "tokens": tokens.get(d, 0)})
    return out


def outcome_mix(
    *, session: Session, tenant_id: str, days: int = 30, now: dt.datetime | None = None
) -> dict[str, int]:
    """Answers per outcome: answered / partial / not_found (anything else is counted as ``unknown``)."""
    stmt = (
        select(AnswerStat.outcome, func.count())
        .where(AnswerStat.tenant_id == tenant_id, AnswerStat.created_at >= _since(days, now))
        .group_by(AnswerStat.outcome)
    )
    mix = {k: 0 for k in OUTCOMES}
    for name, n in session.execute(stmt):
        key = name if name in OUTCOMES else "unknown"
        mix[key] = mix.get(key, 0) + int(n)
    return mix


def percentile(sorted_values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (PostgreSQL's ``percentile_cont``)."""
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def latency_percentiles(
    *, session: Session, tenant_id: str, days: int = 30, now: dt.datetime | None = None
) -> dict[str, dict[str, float]]:
    """First-token and total answer latency (ms) at p50/p90/p95/p99, and how many answers had each."""
    since = _since(days, now)
    out: dict[str, dict[str, float]] = {}
    for name, column in (("first_token", AnswerStat.first_token_ms), ("total", AnswerStat.total_ms)):
        where = (AnswerStat.tenant_id == tenant_id, AnswerStat.created_at >= since, column.is_not(None))
        if _pg(session):
            aggs = [func.percentile_cont(p / 100).within_group(column) for p in PERCENTILES]
            row = session.execute(select(func.count(column), *aggs).where(*where)).one()
            out[name] = {"count": int(row[0] or 0)}
            out[name].update({f"p{p}": round(float(v or 0.0), 1) for p, v in zip(PERCENTILES, row[1:], strict=True)})
        else:
            values = [float(v) for (v,) in session.execute(select(column).where(*where).order_by(column))]
            out[name] = {"count": len(values)}
            out[name].update({f"p{p}": round(percentile(values, p), 1) for p in PERCENTILES})
    return out


def _cited_counts(session: Session, tenant_id: str, since: dt.datetime) -> dict[str, int]:
    rows = session.execute(
        select(AnswerCitation.document_id, func.count())
        .where(AnswerCitation.tenant_id == tenant_id, AnswerCitation.created_at >= since)
        .group_by(AnswerCitation.document_id)
    )
    return {str(d): int(n) for d, n in rows}


def most_cited_documents(
    *, session: Session, tenant_id: str, days: int = 30, limit: int = 10, now: dt.datetime | None = None
) -> list[dict[str, Any]]:
    """Documents cited by the most answers (an answer citing a document several times counts once)."""
    counts = _cited_counts(session, tenant_id, _since(days, now))
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    rows = session.execute(
        select(Document.id, func.coalesce(func.nullif(Document.title, ""), Document.filename)).where(
            Document.tenant_id == tenant_id, Document.id.in_([d for d, _ in top])
        )
    )
    titles = {doc_id: title for doc_id, title in rows}
    return [{"document_id": d, "title": titles.get(d, "(deleted)"), "answers": n} for d, n in top]


def never_cited_documents(
    *, session: Session, tenant_id: str, days: int = 90, limit: int = 100, now: dt.datetime | None = None
) -> dict[str, Any]:
    """Indexed documents no answer cited in the last ``days`` (oldest first), and how many there are."""
    cited = (
        select(AnswerCitation.document_id)
        .where(AnswerCitation.tenant_id == tenant_id, AnswerCitation.created_at >= _since(days, now))
        .distinct()
        .scalar_subquery()
    )
    where = (Document.tenant_id == tenant_id, Document.status == "indexed", Document.id.not_in(cited))
    count = session.scalar(select(func.count()).select_from(Document).where(*where)) or 0
    rows = session.execute(
        select(Document.id, func.coalesce(func.nullif(Document.title, ""), Document.filename), Document.created_at)
        .where(*where)
        .order_by(Document.created_at, Document.id)
        .limit(limit)
    )
    return {
        "days": days,
        "count": int(count),
        "documents": [{"document_id": d, "title": t, "created_at": c} for d, t, c in rows],
    }


REPORTS: dict[str, Callable[..., Any]] = {
    "questions_per_day": questions_per_day,
    "outcome_mix": outcome_mix,
    "latency": latency_percentiles,
    "most_cited": most_cited_documents,
    "never_cited": never_cited_documents,
}


def usage_report(*, session: Session, tenant_id: str, days: int = 30, now: dt.datetime | None = None) -> dict[str, Any]:
    """Every report for the admin's analytics panel (the never-cited list always looks back 90 days)."""
    return {
        "days": days,
        "questions_per_day": questions_per_day(session=session, tenant_id=tenant_id, days=days, now=now),
        "outcome_mix": outcome_mix(session=session, tenant_id=tenant_id, days=days, now=now),
        "latency_ms": latency_percentiles(session=session, tenant_id=tenant_id, days=days, now=now),
        "most_cited": most_cited_documents(session=session, tenant_id=tenant_id, days=days, now=now),
        "never_cited": never_cited_documents(session=session, tenant_id=tenant_id, days=90, now=now),
    }


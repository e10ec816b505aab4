"""The review loop: a queue of answers that need a look, the regression set reviewers build from it, replays of that
set through the answer pipeline, and the knowledge-gaps report.

An answer enters the queue when it ended ``not_found`` or ``partial`` (``record_answer``, called as the answer is
stored) or when its asker gave it a thumbs-down (``record_feedback``). A reviewer (editor or above) marks the section
that answers it (``review_item`` with a chunk found by ``search_for_item``), writes facts the answer must contain, or
marks the document as missing. Reviewed items are the tenant's regression set; ``run_regression`` asks each question
again and checks the expected section is cited and every fact is present, with the change against the previous run.

Sources are shown only for documents the reviewer's ACL groups may see.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.db.models import Document, Message, RegressionRun, ReviewItem, as_utc, utcnow
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.types import SearchFilter, acl_allows

REVIEW_OUTCOMES = ("not_found", "partial")
STATUSES = ("open", "reviewed", "dismissed")
MAX_FACTS = 20
_SOURCE_KEYS = ("n", "chunk_id", "document_id", "title", "section_path", "page_start", "page_end")


def compact_sources(sources: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What an answer's ``sources`` event named, without the passage text (kept in the answer's meta)."""
    return [{k: s.get(k) for k in _SOURCE_KEYS} for s in sources]


# --- entering the queue ---------------------------------------------------------------------------------------------


def _question_before(session: Session, msg: Message) -> str:
    row = session.scalar(
        select(Message.content)
        .where(
            Message.conversation_id == msg.conversation_id,
            Message.role == "user",
            Message.created_at <= msg.created_at,
        )
        .order_by(Message.created_at.desc())
        .limit(1)
    )
    return row or ""


def _item_sources(msg: Message) -> list[dict[str, Any]]:
    sources = list((msg.meta or {}).get("sources") or [])
    if sources:
        return sources
    seen: dict[str, dict[str, Any]] = {}
    for c in msg.citations or []:
        if c.get("chunk_id") and c["chunk_id"] not in seen:
            section = c.get("section") or ""
            seen[c["chunk_id"]] = {
                "n": c.get("n"), "chunk_id": c["chunk_id"], "document_id": c.get("document_id"),
                "title": c.get("title", ""), "section_path": section.split(" > ") if section else [],
                "page_start": c.get("page_start"), "page_end": c.get("page_end"),
            }
    return list(seen.values())


def _enqueue(session: Session, *, tenant_id: str, msg: Message, reason: str, question: str | None = None,
             comment: str = "") -> ReviewItem:
    item = session.scalar(select(ReviewItem).where(ReviewItem.message_id == msg.id))
    if item is None:
        item = ReviewItem(
            tenant_id=tenant_id,
            message_id=msg.id,
            question=question if question is not None else _question_before(session, msg),
            answer=msg.content,
            outcome=str((msg.meta or {}).get("outcome") or ("not_found" if (msg.meta or {}).get("refused") else
                                                          "answered")),
            sources=_item_sources(msg),
            reasons=[reason],
            comment=comment,
            status="open",
            expected_section=[],
            expected_facts=[],
            document_missing=False,
        )
        session.add(item)
    else:
        if reason not in item.reasons:
            item.reasons = [*item.reasons, reason]
        if comment:
            item.comment = f"{item.comment}\n{comment}".strip()
        if item.status == "dismissed":
            item.status = "open"
    session.flush()
    return item


def record_answer(*, session: Session, tenant_id: str, message: Message, question: str) -> ReviewItem | None:
    """Queue a stored answer that ended not found or partial; others are left alone (returns None)."""
    outcome = (message.meta or {}).get("outcome")
    if outcome not in REVIEW_OUTCOMES:
        return None
    return _enqueue(session, tenant_id=tenant_id, msg=message, reason=str(outcome), question=question)


def record_feedback(
    *, session: Session, tenant_id: str, message_id: str, rating: str, comment: str
) -> ReviewItem | None:
    """Queue an answer that got a thumbs-down (with its comment); a thumbs-up queues nothing."""
    if rating != "down":
        return None
    msg = session.get(Message, message_id)
    if msg is None or msg.conversation.tenant_id != tenant_id:
        raise AppError(ErrorCode.NOT_FOUND, "message not found")
    return _enqueue(session, tenant_id=tenant_id, msg=msg, reason="thumbs_down", comment=comment.strip())


# --- reading and reviewing ------------------------------------------------------------------------------------------


def _visible_documents(session: Session, tenant_id: str, ids: set[str], acl_groups: Sequence[str] | None) -> set[str]:
    if not ids:
        return set()
    rows = session.execute(
        select(Document.id, Document.acl_groups).where(Document.tenant_id == tenant_id, Document.id.in_(ids))
    )
    return {doc_id for doc_id, groups in rows if acl_allows(groups or [], acl_groups)}


def item_view(item: ReviewItem, visible: set[str]) -> dict[str, Any]:
    """An item as a reviewer sees it: sources (and the expected section) only from documents they may see."""
    expected_visible = item.expected_document_id is None or item.expected_document_id in visible
    return {
        "id": item.id,
        "message_id": item.message_id,
        "question": item.question,
        "answer": item.answer,
        "outcome": item.outcome,
        "reasons": list(item.reasons),
        "comment": item.comment,
        "sources": [s for s in item.sources if s.get("document_id") in visible],
        "hidden_sources": sum(1 for s in item.sources if s.get("document_id") not in visible),
        "status": item.status,
        "expected": {
            "chunk_id": item.expected_chunk_id if expected_visible else None,
            "document_id": item.expected_document_id if expected_visible else None,
            "title": item.expected_title if expected_visible else "",
            "section_path": list(item.expected_section) if expected_visible else [],
            "facts": list(item.expected_facts),
            "document_missing": item.document_missing,
        },
        "reviewed_at": item.reviewed_at,
        "created_at": item.created_at,
    }


def _views(session: Session, tenant_id: str, items: Sequence[ReviewItem],
           acl_groups: Sequence[str] | None) -> list[dict[str, Any]]:
    ids = {s.get("document_id") for i in items for s in i.sources} | {i.expected_document_id for i in items}
    visible = _visible_documents(session, tenant_id, {d for d in ids if d}, acl_groups)
    return [item_view(i, visible) for i in items]


def list_items(
    *, session: Session, tenant_id: str, acl_groups: Sequence[str] | None, status: str = "open", limit: int = 100
) -> list[dict[str, Any]]:
    stmt = select(ReviewItem).where(ReviewItem.tenant_id == tenant_id)
    if status != "all":
        stmt = stmt.where(ReviewItem.status == status)
    items = list(session.scalars(stmt.order_by(ReviewItem.created_at.desc(), ReviewItem.id).limit(limit)))
    return _views(session, tenant_id, items, acl_groups)


def _get(session: Session, tenant_id: str, item_id: str) -> ReviewItem:
    item = session.get(ReviewItem, item_id)
    if item is None or item.tenant_id != tenant_id:
        raise AppError(ErrorCode.NOT_FOUND, "review item not found")
    return item


def get_item(*, session: Session, tenant_id: str, item_id: str, acl_groups: Sequence[str] | None) -> dict[str, Any]:
    return _views(session, tenant_id, [_get(session, tenant_id, item_id)], acl_groups)[0]


def get_question(*, session: Session, tenant_id: str, item_id: str) -> str:
    return _get(session, tenant_id, item_id).question


def clean_facts(facts: Sequence[str]) -> list[str]:
    out: list[str] = []
    for f in facts:
        f = " ".join(f.split())
        if f and f not in out:
            out.append(f)
    if len(out) > MAX_FACTS:
        raise AppError(ErrorCode.VALIDATION, f"at most {MAX_FACTS} facts")
    return out


def review_item(
    *,
    session: Session,
    chunk_store: Any,
    flt: SearchFilter,
    item_id: str,
    reviewer_id: str,
    chunk_id: str | None,
    facts: Sequence[str],
    document_missing: bool,
    status: str = "reviewed",
) -> dict[str, Any]:
    """Record a review: the section that answers (a chunk the reviewer may see), expected facts, or document missing.
    ``status`` ``reviewed`` puts the item in the regression set; ``dismissed`` and ``open`` take it out."""
    if status not in STATUSES:
        raise AppError(ErrorCode.VALIDATION, f"status must be one of {', '.join(STATUSES)}")
    item = _get(session, flt.tenant_id, item_id)
    facts = clean_facts(facts)
    if chunk_id:
        chunk = chunk_store.get_many([chunk_id]).get(chunk_id)
        if chunk is None or not flt.admits(chunk):
            raise AppError(ErrorCode.NOT_FOUND, "passage not found")
        if document_missing:
            raise AppError(ErrorCode.VALIDATION, "a section was marked: the document is not missing")
        item.expected_chunk_id = chunk.id
        item.expected_document_id = chunk.document_id
        item.expected_title = chunk.title[:512]
        item.expected_section = list(chunk.section_path)
    else:
        item.expected_chunk_id = item.expected_document_id = None
        item.expected_title = ""
        item.expected_section = []
    if status == "reviewed" and not (chunk_id or facts or document_missing):
        raise AppError(
            ErrorCode.VALIDATION, "mark the section that answers, write expected facts, or mark the document missing"
        )
    item.expected_facts = facts
    item.document_missing = document_missing
    item.status = status
    item.reviewer_id = reviewer_id
    item.reviewed_at = utcnow() if status == "reviewed" else None
    session.flush()
    return get_item(session=session, tenant_id=flt.tenant_id, item_id=item.id, acl_groups=flt.acl_groups)


async def search_for_item(*, retriever: Any, flt: SearchFilter, query: str, top_k: int = 8) -> list[dict[str, Any]]:
    """Candidate sections for an item: the product's hybrid search under the reviewer's own filter."""
    result = await retriever.retrieve(query, flt, top_k)
    return [
        {
            "chunk_id": r.chunk.id,
            "document_id": r.chunk.document_id,
            "title": r.chunk.title,
            "section_path": list(r.chunk.section_path),
            "page_start": r.chunk.page_start,
            "text": r.chunk.text[:600],
            "score": round(float(r.score), 4),
        }
        for r in result.chunks
    ]


# --- regression runs ------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:[.,:/-][a-z0-9]+)*")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def fact_present(fact: str, answer: str) -> bool:
    """A fact is present when its words appear in the answer in order, next to each other (case, punctuation and
    Markdown emphasis ignored)."""
    want, have = _words(fact), _words(answer)
    if not want:
        return True
    n = len(want)
    return any(have[i : i + n] == want for i in range(len(have) - n + 1))


def _section_matches(expected_doc: str, expected_path: Sequence[str], doc: str | None, path: Sequence[str]) -> bool:
    if doc != expected_doc:
        return False
    k = min(len(expected_path), len(path))
    return list(expected_path[:k]) == list(path[:k])


@dataclass
class AnswerReplay:
    answer: str = ""
    outcome: str = ""
    sources: list[dict[str, Any]] = field(default_factory=list)
    cited_chunk_ids: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    error: str = ""


def judge(item: ReviewItem, replay: AnswerReplay) -> dict[str, Any]:
    """Pass or fail of one replayed item: expected section cited, facts present, or (document missing) no answer
    claimed."""
    by_chunk = {s["chunk_id"]: s for s in replay.sources if s.get("chunk_id")}
    cited = [by_chunk[c] for c in replay.cited_chunk_ids if c in by_chunk]
    cited_sections = []
    for s in cited:
        label = {"document_id": s.get("document_id"), "title": s.get("title", ""),
                 "section_path": list(s.get("section_path") or [])}
        if label not in cited_sections:
            cited_sections.append(label)
    section_ok: bool | None = None
    if item.expected_document_id:
        section_ok = item.expected_chunk_id in replay.cited_chunk_ids or any(
            _section_matches(item.expected_document_id, item.expected_section, s["document_id"], s["section_path"])
            for s in cited_sections
        )
    missing_facts = [f for f in item.expected_facts if not fact_present(f, replay.answer)]
    facts_ok: bool | None = (not missing_facts) if item.expected_facts else None
    missing_ok: bool | None = None
    if item.document_missing:
        missing_ok = replay.outcome in REVIEW_OUTCOMES  # still missing: the answer must not claim to know
    checks = [c for c in (section_ok, facts_ok, missing_ok) if c is not None]
    passed = bool(checks) and all(checks) and not replay.error
    return {
        "item_id": item.id,
        "question": item.question,
        "passed": passed,
        "section_ok": section_ok,
        "facts_ok": facts_ok,
        "document_missing_ok": missing_ok,
        "missing_facts": missing_facts,
        "expected_section": {"document_id": item.expected_document_id, "title": item.expected_title,
                             "section_path": list(item.expected_section)},
        "cited_sections": cited_sections,
        "outcome": replay.outcome,
        "answer": replay.answer[:2000],
        "degraded": replay.degraded,
        "error": replay.error,
    }


async def replay_answer(answers: Any, question: str, *, flt: SearchFilter, top_k: int) -> AnswerReplay:
    """Ask ``question`` once through the answer pipeline (no history) and collect what the checks need."""
    out = AnswerReplay()
    async for event in answers.run(
        question, flt=flt, history=[], request_id=uuid.uuid4().hex, conversation_id="regression",
        message_id=uuid.uuid4().hex, top_k=top_k,
    ):
        data = event.to_dict()
        if event.type == "sources":
            out.sources = data.get("sources", [])
        elif event.type == "citations":
            out.cited_chunk_ids = [c["chunk_id"] for c in data.get("citations", []) if c.get("chunk_id")]
        elif event.type == "degraded":
            out.degraded += [str(r) for r in data.get("reasons", [])]
        elif event.type == "error":
            out.error = f"{data.get('code')}: {data.get('message')}"
        elif event.type == "done":
            out.answer = data.get("answer", "")
            out.outcome = data.get("outcome", "")
    return out


def _change(previous: bool | None, now: bool) -> str:
    if previous is None:
        return "new"
    if previous == now:
        return "same"
    return "fixed" if now else "broke"


def regression_set(*, session: Session, tenant_id: str) -> list[ReviewItem]:
    return list(session.scalars(
        select(ReviewItem)
        .where(ReviewItem.tenant_id == tenant_id, ReviewItem.status == "reviewed")
        .order_by(ReviewItem.created_at, ReviewItem.id)
    ))


def _last_run(session: Session, tenant_id: str) -> RegressionRun | None:
    return session.scalar(
        select(RegressionRun)
        .where(RegressionRun.tenant_id == tenant_id, RegressionRun.finished_at.is_not(None))
        .order_by(RegressionRun.started_at.desc())
        .limit(1)
    )


async def run_regression(
    *, db: Database, answers: Any, flt: SearchFilter, actor_name: str, top_k: int
) -> dict[str, Any]:
    """Replay the tenant's regression set through ``answers`` (the pipeline the ask route uses), judge each item,
    compare with the previous run and store the run. Database work runs off the event loop."""
    import anyio.to_thread

    def load() -> tuple[list[ReviewItem], str | None, dict[str, bool]]:
        with db.session() as s:
            items = regression_set(session=s, tenant_id=flt.tenant_id)
            last = _last_run(s, flt.tenant_id)
            before = {r["item_id"]: bool(r["passed"]) for r in (last.results if last else [])}
            return items, (last.id if last else None), before

    items, previous_id, before = await anyio.to_thread.run_sync(load)
    started = utcnow()
    results = []
    for item in items:
        t0 = time.perf_counter()
        replay = await replay_answer(answers, item.question, flt=flt, top_k=top_k)
        result = judge(item, replay)
        result["change"] = _change(before.get(item.id), result["passed"])
        result["latency_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        results.append(result)

    def store() -> dict[str, Any]:
        with db.session() as s:
            run = RegressionRun(
                tenant_id=flt.tenant_id, actor_name=actor_name[:254], started_at=started, finished_at=utcnow(),
                total=len(results), passed=sum(1 for r in results if r["passed"]), previous_run_id=previous_id,
                results=results,
            )
            s.add(run)
            s.flush()
            return run_view(run)

    return await anyio.to_thread.run_sync(store)


async def compare_regression(
    *, db: Database, live: Any, candidate: Any, flt: SearchFilter, top_k: int
) -> dict[str, Any]:
    """The tenant's regression set replayed through the ``live`` pipeline and a ``candidate`` one side by side (a
    staging copy of the indexes, or changed settings), before the candidate goes live. Nothing is stored. Per item:
    both judgements and the change from live to candidate (``same`` / ``fixed`` / ``broke``)."""
    import anyio.to_thread

    def load() -> list[ReviewItem]:
        with db.session() as s:
            items = regression_set(session=s, tenant_id=flt.tenant_id)
            s.expunge_all()
            return items

    items = await anyio.to_thread.run_sync(load)
    rows: list[dict[str, Any]] = []
    for item in items:
        now = judge(item, await replay_answer(live, item.question, flt=flt, top_k=top_k))
        then = judge(item, await replay_answer(candidate, item.question, flt=flt, top_k=top_k))
        rows.append({"item_id": item.id, "question": item.question, "live": now, "candidate": then,
                     "change": _change(now["passed"], then["passed"])})
    changes = Counter(r["change"] for r in rows)
    return {
        "total": len(rows),
        "live_passed": sum(1 for r in rows if r["live"]["passed"]),
        "candidate_passed": sum(1 for r in rows if r["candidate"]["passed"]),
        "changes": {k: changes.get(k, 0) for k in ("same", "fixed", "broke")},
        "results": rows,
    }


def run_view(run: RegressionRun, *, with_results: bool = True) -> dict[str, Any]:
    changes = Counter(r.get("change", "new") for r in run.results)
    return {
        "id": run.id,
        "actor_name": run.actor_name,
        "started_at": as_utc(run.started_at),
        "finished_at": as_utc(run.finished_at) if run.finished_at else None,
        "total": run.total,
        "passed": run.passed,
        "failed": run.total - run.passed,
        "previous_run_id": run.previous_run_id,
        "changes": {k: changes.get(k, 0) for k in ("new", "same", "fixed", "broke")},
        "results": list(run.results) if with_results else [],
    }


def list_runs(*, session: Session, tenant_id: str, limit: int = 20) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(RegressionRun).where(RegressionRun.tenant_id == tenant_id)
        .order_by(RegressionRun.started_at.desc()).limit(limit)
    )
    return [run_view(r, with_results=False) for r in rows]


def get_run(*, session: Session, tenant_id: str, run_id: str) -> dict[str, Any]:
    run = session.get(RegressionRun, run_id)
    if run is None or run.tenant_id != tenant_id:
        raise AppError(ErrorCode.NOT_FOUND, "regression run not found")
    return run_view(run)


# --- knowledge gaps -------------------------------------------------------------------------------------------------

_STOP_WORDS = (
    "a an and are as at be been but by can could did do does for from has have how i if in into is it its me my "
    "no not of on or our so than that the their them then there these they this to too us was we what when where "
    "which who why will with would you your yours am any all get got also just more most other some such only own "
    "same should very s t don doesn isn won cant can't i'm it's is there"
)
_STOP = frozenset(_STOP_WORDS.split())
GAP_THRESHOLD = 0.55
GAP_MAX_QUESTIONS = 2000


def _terms(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z0-9-]{2,}", text.lower()) if w not in _STOP]


def cluster(vectors: Any, threshold: float = GAP_THRESHOLD) -> list[list[int]]:
    """Greedy clustering of unit vectors: each vector joins the closest topic centroid with cosine >= threshold, or
    starts a new topic. Deterministic for a given order."""
    import numpy as np

    centroids: list[Any] = []
    members: list[list[int]] = []
    for i, v in enumerate(vectors):
        if centroids:
            sims = np.stack(centroids) @ v
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                members[best].append(i)
                c = np.mean(vectors[members[best]], axis=0)
                centroids[best] = c / (np.linalg.norm(c) or 1.0)
                continue
        centroids.append(v)
        members.append([i])
    return members


def top_terms(texts: Sequence[str], background: Counter[str], k: int = 3) -> list[str]:
    """Terms frequent in the topic's questions and rare in the others (document frequency ratio)."""
    inside: Counter[str] = Counter()
    for t in texts:
        inside.update(set(_terms(t)))
    total = sum(background.values()) or 1
    scored = sorted(
        inside.items(),
        key=lambda kv: (-(kv[1] * (1.0 + len(texts) / total) / (background[kv[0]] or 1)) * kv[1], kv[0]),
    )
    return [t for t, _ in scored[:k]]


def gaps_report(
    *, session: Session, embedder: Any, tenant_id: str, days: int = 30, now: dt.datetime | None = None
) -> dict[str, Any]:
    """Questions that ended not found / partial or got a thumbs-down in the last ``days``, grouped into topics by
    embedding the questions with the product's embedder; each topic is labelled by its top terms, with its count,
    a per-day trend (oldest first) and example questions. ``nearest_documents`` fills in each topic's documents."""
    import numpy as np

    now = now or utcnow()
    since = now - dt.timedelta(days=days)
    rows = session.execute(
        select(ReviewItem.question, ReviewItem.created_at, ReviewItem.reasons)
        .where(ReviewItem.tenant_id == tenant_id, ReviewItem.created_at >= since, ReviewItem.status != "dismissed")
        .order_by(ReviewItem.created_at.desc())
        .limit(GAP_MAX_QUESTIONS)
    ).all()
    rows = [r for r in rows if r.question.strip()]
    if not rows:
        return {"days": days, "total": 0, "topics": []}
    questions = [r.question for r in rows]
    vectors = np.asarray(embedder.embed_documents(questions), dtype="float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-9)
    groups = cluster(vectors)
    background: Counter[str] = Counter()
    for q in questions:
        background.update(set(_terms(q)))
    start_day = (now - dt.timedelta(days=days - 1)).date()
    topics: list[dict[str, Any]] = []
    for members in groups:
        trend = [0] * days
        reasons: Counter[str] = Counter()
        for i in members:
            d = (as_utc(rows[i].created_at).date() - start_day).days
            if 0 <= d < days:
                trend[d] += 1
            reasons.update(rows[i].reasons or [])
        texts = [questions[i] for i in members]
        examples = list(dict.fromkeys(texts))[:3]
        terms = top_terms(texts, background) or _terms(texts[0])[:3]
        topics.append({
            "label": " / ".join(terms) if terms else texts[0][:60],
            "terms": terms,
            "count": len(members),
            "reasons": dict(reasons),
            "trend": trend,
            "examples": examples,
            "documents": [],
        })
    topics.sort(key=lambda t: (-t["count"], t["label"]))
    return {"days": days, "total": len(rows), "topics": topics}


async def nearest_documents(
    *, retriever: Any, flt: SearchFilter, topics: list[dict[str, Any]], per_topic: int = 3, max_topics: int = 25
) -> None:
    """Fill each topic's ``documents`` with the documents search finds nearest to its questions (the reviewer's own
    filter, so only documents they may see)."""
    for topic in topics[:max_topics]:
        query = " ".join(topic["examples"][:2]) or topic["label"]
        try:
            result = await retriever.retrieve(query[:2000], flt, per_topic * 4)
        except AppError:
            continue
        docs: dict[str, dict[str, Any]] = {}
        for r in result.chunks:
            if r.chunk.document_id not in docs:
                docs[r.chunk.document_id] = {
                    "document_id": r.chunk.document_id, "title": r.chunk.title,
                    "section_path": list(r.chunk.section_path), "score": round(float(r.score), 4),
                }
            if len(docs) >= per_topic:
                break
        topic["documents"] = list(docs.values())


def gaps_csv(report: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        ["topic", "count", "not_found", "partial", "thumbs_down", "last_7_days", "examples", "nearest_documents"]
    )
    for t in report["topics"]:
        w.writerow([
            t["label"], t["count"], t["reasons"].get("not_found", 0), t["reasons"].get("partial", 0),
            t["reasons"].get("thumbs_down", 0), sum(t["trend"][-7:]), " | ".join(t["examples"]),
            " | ".join(d["title"] for d in t["documents"]),
        ])
    return buf.getvalue()

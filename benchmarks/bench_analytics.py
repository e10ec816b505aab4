"""Usage-analytics benchmark: the cost of each admin report on 100,000 logged questions in PostgreSQL.

Creates a throw-away database on the test PostgreSQL server (``KBQA_TEST_PG_URL``, as `make services` starts it),
migrates it to head (with the analytics indexes), writes ``--questions`` questions, each with its answer (outcome,
timings, 1-4 citations of realistic size) over 90 days in one tenant, plus 10% noise in a second tenant, runs
ANALYZE, then times every report of ``app.services.analytics`` (median and max of ``--repeat`` runs after one warm-up)
and drops the database.

    python benchmarks/bench_analytics.py --questions 100000      # target: < 500 ms per report
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402

from app.services import analytics  # noqa: E402
from core.db.models import AnswerCitation, AnswerStat, Conversation, Document, Message, Tenant  # noqa: E402
from core.db.session import Database  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 500.0
SENTENCE = "Press and hold the reset button for 10 seconds until the light blinks amber, then release it."


def _migrate(url: str) -> None:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(cfg, "head")


def _fill(db: Database, *, questions: int, documents: int, now: dt.datetime, seed: int = 1) -> None:
    rng = random.Random(seed)
    with db.session() as s:
        s.add_all([Tenant(id="acme", name="acme"), Tenant(id="noise", name="noise")])
        s.flush()
        s.execute(sa.insert(Document), [
            {"id": f"d{i:06d}", "tenant_id": "acme" if i < documents else "noise", "filename": f"doc-{i}.pdf",
             "title": f"Document {i}", "content_hash": f"{i:064d}", "status": "indexed", "acl_groups": [], "tags": []}
            for i in range(documents + documents // 10)
        ])
    total = questions + questions // 10
    batch = 5000
    weights = [1.0 / (i + 1) for i in range(documents)]  # a few documents are cited a lot, most rarely
    for start in range(0, total, batch):
        convs, msgs, stats, cited = [], [], [], []
        for i in range(start, min(start + batch, total)):
            tenant = "acme" if i < questions else "noise"
            at = now - dt.timedelta(seconds=rng.uniform(0, 90 * 86400))
            cid = uuid.uuid4().hex
            convs.append({"id": cid, "tenant_id": tenant, "actor_id": f"{i % 50:032d}", "title": "q",
                          "created_at": at, "updated_at": at})
            outcome = rng.choices(("answered", "partial", "not_found"), (0.8, 0.12, 0.08))[0]
            cites = []
            if outcome != "not_found":
                for d in rng.choices(range(documents), weights, k=rng.randint(1, 4)):
                    cites.append({"n": 1, "chunk_id": uuid.uuid4().hex, "document_id": f"d{d:06d}",
                                  "title": f"Document {d}", "section": "Setup > Reset", "page_start": 3,
                                  "page_end": 3, "sentence": SENTENCE, "supported": True,
                                  "support": {"lexical": 0.8, "embedding": 0.7}})
            first = rng.lognormvariate(5.5, 0.5)
            meta = {"refused": outcome == "not_found", "degraded": False, "outcome": outcome, "missing": [],
                    "mode": "excerpt", "timings_ms": {"retrieve": first * 0.6, "first_token": first,
                                                      "total": first + rng.lognormvariate(6.5, 0.4)}}
            msgs.append({"id": uuid.uuid4().hex, "conversation_id": cid, "role": "user",
                         "content": f"How do I reset device {i}?", "citations": [], "meta": {}, "created_at": at})
            mid, answered_at = uuid.uuid4().hex, at + dt.timedelta(seconds=2)
            msgs.append({"id": mid, "conversation_id": cid, "role": "assistant",
                         "content": SENTENCE * 3, "citations": cites, "meta": meta, "created_at": answered_at})
            # what analytics.record_answer writes with each stored answer
            stats.append({"message_id": mid, "tenant_id": tenant, "created_at": answered_at, "outcome": outcome,
                          "first_token_ms": first, "total_ms": meta["timings_ms"]["total"]})
            cited += [{"message_id": mid, "document_id": d, "tenant_id": tenant, "created_at": answered_at}
                      for d in sorted({c["document_id"] for c in cites})]
        with db.session() as s:
            s.execute(sa.insert(Conversation), convs)
            s.execute(sa.insert(Message), msgs)
            s.execute(sa.insert(AnswerStat), stats)
            if cited:
                s.execute(sa.insert(AnswerCitation), cited)
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM ANALYZE"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--pg-url", default=os.environ.get("KBQA_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
    )
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--documents", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    name = f"kbqa_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(args.pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = args.pg_url.rsplit("/", 1)[0] + f"/{name}"
    db = Database(url)
    try:
        _migrate(url)
        now = dt.datetime.now(dt.timezone.utc)
        t0 = time.perf_counter()
        _fill(db, questions=args.questions, documents=args.documents, now=now)
        print(f"generated {args.questions:,} questions (+{args.questions // 10:,} in another tenant), "
              f"{args.documents:,} documents in {time.perf_counter() - t0:.0f}s")
        reports = [
            ("questions_per_day (30 d)", lambda s: analytics.questions_per_day(session=s, tenant_id="acme", days=30)),
            ("questions_per_day (90 d)", lambda s: analytics.questions_per_day(session=s, tenant_id="acme", days=90)),
            ("outcome_mix (30 d)", lambda s: analytics.outcome_mix(session=s, tenant_id="acme", days=30)),
            ("outcome_mix (90 d)", lambda s: analytics.outcome_mix(session=s, tenant_id="acme", days=90)),
            ("latency p50-p99 (30 d)", lambda s: analytics.latency_percentiles(session=s, tenant_id="acme", days=30)),
            ("latency p50-p99 (90 d)", lambda s: analytics.latency_percentiles(session=s, tenant_id="acme", days=90)),
            ("most_cited (30 d)", lambda s: analytics.most_cited_documents(session=s, tenant_id="acme", days=30)),
            ("most_cited (90 d)", lambda s: analytics.most_cited_documents(session=s, tenant_id="acme", days=90)),
            ("never_cited (90 d)", lambda s: analytics.never_cited_documents(session=s, tenant_id="acme", days=90)),
            ("usage_report (all, 30 d)", lambda s: analytics.usage_report(session=s, tenant_id="acme", days=30)),
        ]
        print(f"\n{'report':28} {'median ms':>10} {'max ms':>8}  target < {TARGET_MS:.0f} ms")
        worst = 0.0
        for label, fn in reports:
            times = []
            for _ in range(args.repeat + 1):
                with db.session() as s:
                    t = time.perf_counter()
                    fn(s)
                    times.append((time.perf_counter() - t) * 1000)
            times = times[1:]
            med = statistics.median(times)
            single = not label.startswith("usage_report")
            worst = max(worst, med) if single else worst
            flag = "" if med < TARGET_MS or not single else "  OVER"
            print(f"{label:28} {med:10.1f} {max(times):8.1f}{flag}")
        print(f"\nslowest single report: {worst:.1f} ms ({'within' if worst < TARGET_MS else 'over'} target)")
        return 0 if worst < TARGET_MS else 1
    finally:
        db.dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    raise SystemExit(main())

"""A long PDF whose worker is killed mid-parse resumes from its saved parts (issue 12, item 3), on real parts: a real
120-page PDF, the real parser children, SQLite, the local file store, MiniLM and the embedded indexes.

An embedded-mode ingest process (the real upload service, in-process dispatcher and pipeline, in a process of its own)
parses the PDF in 30-page parts and is killed with SIGKILL once two parts are saved. The next process starts the way
``kbqa serve`` does (unfinished jobs back in the outbox, a sweep): the job's second attempt loads the saved parts,
parses only the pages after them, and the document is found by search on its last page; the parse child of the killed
process did not outlive it, and no part is left once the document is indexed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.models import Chunk, IngestionJob
from core.types import Role
from ingestion.parsing.child import PARENT_PID_ENV

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PAGES = 120
PART_PAGES = 30

_WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from core.db.session import Database
    from core.settings import Settings
    from ingestion.executors import InlineDispatcher
    from ingestion.pipeline import IngestPipeline
    from ingestion.service import IngestService

    settings = Settings(_env_file=None)
    db = Database(settings.database_url)
    # only the parse runs here before the kill: indexes, embedder and extractor are never reached
    pipeline = IngestPipeline(settings=settings, db=db, indexes=None, embedder=None, extractor=None)
    service = IngestService(settings=settings, db=db, dispatcher=InlineDispatcher(pipeline.run), indexes=None)
    pdf = Path(sys.argv[1])
    doc = service.submit(tenant_id="t", filename=pdf.name, data=pdf.read_bytes()).document
    print(doc.id, flush=True)
    service.dispatcher.wait()
    """
)


def _manual(path: Path, pages: int) -> None:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    for n in range(1, pages + 1):
        c.setFont("Helvetica", 9)
        c.drawString(72, 770, "Kestrel Hub service manual")
        c.drawString(300, 30, f"Page {n}")
        if n % 10 == 1:
            c.setFont("Helvetica-Bold", 15)
            c.drawString(72, 730, f"Chapter {n // 10 + 1}: the {('fan', 'relay', 'valve')[n % 3]} unit")
        c.setFont("Helvetica", 11)
        for row in range(3):
            part = ("fan", "filter", "hinge", "relay", "sensor", "valve", "belt")[(n + row) % 7]
            c.drawString(72, 700 - row * 20, f"Page {n} line {row}: maintenance step {n}.{row} checks the {part}.")
        c.showPage()
    c.save()


def _parse_children(parent: int) -> list[int]:
    """Pids of parser processes (``ingestion.parsing.child``) started by process ``parent``. Matched by the parent pid
    they were started with (their environment), not by their parent now: an orphan is re-parented; and not by the
    file, which a parser process gets on stdin with each job."""
    found = []
    marker = f"{PARENT_PID_ENV}={parent}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if b"ingestion.parsing.child" in cmdline and marker in environ.split(b"\0"):
                found.append(int(entry.name))
    return found


def test_a_killed_worker_s_long_pdf_resumes_from_its_saved_parts(tmp_path, monkeypatch):
    from app.main import build_container, create_app
    from core.settings import Settings
    from ingestion.parsing import parts as parts_module

    pdf = tmp_path / "kestrel-service-manual.pdf"
    _manual(pdf, PAGES)
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "KBQA_DATA_DIR": str(data_dir),
        "KBQA_INGESTION__PARSE_PART_PAGES": str(PART_PAGES),
        "PYTHONPATH": os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH", "")) if p),
    }
    settings = Settings(
        _env_file=None,
        data_dir=data_dir,
        api={"requests_per_minute": 0, "tokens_per_minute": 0},
        ingestion={"parse_part_pages": PART_PAGES},
    )
    migrate_database(settings)
    parts_root = Path(settings.upload_dir) / ".parse-parts"

    # --- attempt 1: an ingest process parses, and is killed after two parts ---------------------------------------
    started = time.monotonic()
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(pdf)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert worker.stdout is not None
        doc_id = worker.stdout.readline().decode().strip()
        assert doc_id, "the ingest process did not accept the upload"
        deadline = time.monotonic() + 120
        children_seen = False  # the orphan check below must be able to see a parser process
        while len(list(parts_root.rglob("part-*.json.gz"))) < 2:
            assert worker.poll() is None, "the ingest process ended before it was killed"
            assert time.monotonic() < deadline, "no two parts saved within 120 s"
            children_seen = children_seen or bool(_parse_children(worker.pid))
            time.sleep(0.05)
        children_seen = children_seen or bool(_parse_children(worker.pid))
        worker.send_signal(signal.SIGKILL)
    finally:
        worker.kill()
        worker.wait()
    killed_after = time.monotonic() - started
    saved = sorted(p.name for p in parts_root.rglob("part-*.json.gz"))
    assert saved[:2] == ["part-00000.json.gz", "part-00001.json.gz"]
    resume_page = len(saved) * PART_PAGES + 1
    assert children_seen, "no parser process of the ingest process was ever found"
    for _ in range(40):  # the parse child dies with its worker (PR_SET_PDEATHSIG), it does not parse on alone
        if not _parse_children(worker.pid):
            break
        time.sleep(0.05)
    assert _parse_children(worker.pid) == []
    container = build_container(settings)
    with container.db.session() as s:
        job = repo.latest_job(session=s, document_id=doc_id)
        assert (job.status, job.attempts) == ("parsing", 1)

    # --- attempt 2: a new process starts, recovers the job, resumes from the saved parts --------------------------
    parsed_ranges: list[tuple[int, int] | None] = []
    real_run_isolated = parts_module.run_isolated

    def counting_run_isolated(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - records, then the real child runs
        parsed_ranges.append(kwargs["options"].pages)
        return real_run_isolated(*args, **kwargs)

    monkeypatch.setattr(parts_module, "run_isolated", counting_run_isolated)
    restarted = time.monotonic()
    try:
        container.start_sweeper(interval_s=0.5)
        deadline = time.monotonic() + 180
        while True:
            with container.db.session() as s:
                status = repo.latest_job(session=s, document_id=doc_id).status
            if status in ("indexed", "failed") or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        resumed_s = time.monotonic() - restarted
        with container.db.session() as s:
            job = s.get(IngestionJob, repo.latest_job(session=s, document_id=doc_id).id)
            assert (job.status, job.failure_reason, job.attempts) == ("indexed", None, 2)
            parsing = job.stages["parsing"]
            spans = [(c.page_start, c.page_end) for c in s.query(Chunk).filter(Chunk.document_id == doc_id)]
            _, key = repo.create_api_key(session=s, tenant_id="t", name="t", role=Role.ADMIN)
        # pages before the kill were not parsed again: every part parsed now starts after the saved ones
        expected = [(a, min(a + PART_PAGES - 1, PAGES)) for a in range(resume_page, PAGES + 1, PART_PAGES)]
        assert parsed_ranges == expected
        assert parsing["resumed_from_page"] == resume_page
        assert (parsing["parts_done"], parsing["parts_total"]) == (PAGES // PART_PAGES, PAGES // PART_PAGES)
        assert parsing["detail"] == f"{PAGES} of {PAGES}"
        covered = {p for a, b in spans for p in range(a, b + 1)}
        assert covered == set(range(1, PAGES + 1)), "the chunks do not cover every page"
        assert not list(parts_root.rglob("*")), "saved parts are left after the document was indexed"

        app = create_app(settings, container=container, sweeper=False)
        with TestClient(app) as client:
            headers = {"Authorization": f"Bearer {key}"}
            r = client.get("/api/v1/search", params={"q": f"maintenance step {PAGES}.2", "top_k": 3}, headers=headers)
            assert r.status_code == 200, r.text
            hit = r.json()["results"][0]
            assert hit["document_id"] == doc_id and hit["page_end"] == PAGES
            detail = client.get(f"/api/v1/documents/{doc_id}", headers=headers).json()
            stage = next(st for st in detail["stages"] if st["name"] == "parsing")
            assert stage["resumed_from_page"] == resume_page and stage["parts_total"] == PAGES // PART_PAGES
    finally:
        container.close()
    print(
        f"\n{PAGES}-page PDF: worker killed {killed_after:.1f} s after start with {len(saved)} of "
        f"{PAGES // PART_PAGES} parts saved; the restarted process parsed pages {resume_page}-{PAGES} only "
        f"({len(parsed_ranges)} parts) and indexed the document {resumed_s:.1f} s after its start; stages (ms): "
        f"{ {name: st.get('duration_ms') for name, st in job.stages.items()} }"
    )

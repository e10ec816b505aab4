"""Long PDFs parsed in page-range parts (issue 12, item 3): the split, the merge (identical to one parse of the whole
file, sections carried across part boundaries), saved parts resumed by a retried job and never reused for other bytes
or another version, and the parts deleted once the document is indexed, failed or deleted."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.cli import migrate_database
from core.db.models import Document, IngestionJob
from core.db.session import Database
from core.errors import AppError
from core.filestore import LocalFileStore
from ingestion.chunking import chunk_elements
from ingestion.parsing import ParseOptions
from ingestion.parsing.parts import FilePartStore, PartsProgress, parse_in_parts, part_ranges, parts_prefix
from ingestion.parsing.pdf import PdfPart, assemble, parse_pdf, read_pages
from ingestion.service import IngestService
from tests.fakes import FakeDispatcher, FakeEmbedder, FakeExtractor, FakeIndexRemover, FakePdfPartParser

pytestmark = pytest.mark.unit


def _parse(parser: FakePdfPartParser, part_pages: int, **kw):  # noqa: ANN003, ANN202
    return parse_in_parts(
        Path("manual.pdf"),
        filename="manual.pdf",
        part_pages=part_pages,
        timeout_s=10,
        memory_mb=512,
        options=ParseOptions(),
        run_part=parser,
        **kw,
    )


def _store(tmp_path: Path, **kw) -> FilePartStore:  # noqa: ANN003
    args = {"document_id": "doc-1", "version": 1, "digest": "ab" * 32, "size": 1000, "part_pages": 5} | kw
    return FilePartStore(LocalFileStore(tmp_path / "files"), **args)


def _chunks(doc):  # noqa: ANN001, ANN202
    return chunk_elements(
        doc.elements, count_tokens=lambda t: len(t.split()), target_tokens=40, overlap_tokens=5, table_max_tokens=100
    )


def test_part_ranges_cover_every_page_once():
    assert part_ranges(12, 5) == [(1, 5), (6, 10), (11, 12)]
    assert part_ranges(10, 5) == [(1, 5), (6, 10)]
    assert part_ranges(3, 50) == [(1, 3)]
    ranges = part_ranges(301, 50)
    assert [p for a, b in ranges for p in range(a, b + 1)] == list(range(1, 302))


def test_parts_merge_to_the_same_document_and_chunks_as_one_parse():
    whole = _parse(FakePdfPartParser(pages=23), 0)
    parser = FakePdfPartParser(pages=23)
    seen: list[tuple[int, int]] = []
    parted = _parse(parser, 5, on_progress=lambda d, t: seen.append((d, t)))
    assert parser.calls == [(1, 5), (6, 10), (11, 15), (16, 20), (21, 23)]
    assert parted == whole
    assert [(d, t) for d, t in seen][-1] == (23, 23) and [d for d, _ in seen] == list(range(1, 24))
    # a section that starts in one part goes on in the next: chapter 2 opens on page 6, part 2's first page
    page7 = next(e for e in parted.elements if e.page == 7 and e.kind == "text")
    assert page7.section_path == ("Kestrel Hub Manual", "Chapter 2")
    page10 = next(e for e in parted.elements if e.page == 10 and e.kind == "text")
    assert page10.section_path == ("Kestrel Hub Manual", "Chapter 2", "Checks of page 8")
    # heading levels are the whole document's: chapter titles stay level 2 in every part
    assert {e.level for e in parted.elements if e.kind == "title" and e.text.startswith("Chapter")} == {2}
    assert [(c.text, c.section_path, c.page_start, c.page_end) for c in _chunks(parted)] == [
        (c.text, c.section_path, c.page_start, c.page_end) for c in _chunks(whole)
    ]


def test_a_short_pdf_is_one_part_and_nothing_is_saved(tmp_path):
    parser = FakePdfPartParser(pages=4)
    store = _store(tmp_path)
    doc = _parse(parser, 5, store=store)
    assert parser.calls == [(1, 5)] and doc.page_count == 4
    assert not (tmp_path / "files").exists()


def test_a_retry_loads_the_saved_parts_and_parses_only_the_rest(tmp_path):
    class Stop(Exception):
        pass

    notes: list[dict[str, int]] = []

    def stop_after_three(progress: PartsProgress) -> None:
        notes.append(progress.notes())
        if progress.parts_done == 3:
            raise Stop  # as the lease check between parts does when another worker took the job

    first = FakePdfPartParser(pages=23)
    with pytest.raises(Stop):
        _parse(first, 5, store=_store(tmp_path), on_part=stop_after_three)
    assert first.calls == [(1, 5), (6, 10), (11, 15)]
    assert notes[-1] == {"parts_done": 3, "parts_total": 5}

    retry = FakePdfPartParser(pages=23)
    seen: list[tuple[int, int]] = []
    notes.clear()
    doc = _parse(retry, 5, store=_store(tmp_path), on_part=lambda p: notes.append(p.notes()),
                 on_progress=lambda d, t: seen.append((d, t)))  # fmt: skip
    assert retry.calls == [(16, 20), (21, 23)]  # pages 1-15 are not parsed again
    assert seen[0] == (5, 23) and seen[-1] == (23, 23)
    assert notes[-1] == {"parts_done": 5, "parts_total": 5, "resumed_from_page": 16}
    assert doc == _parse(FakePdfPartParser(pages=23), 0)


def test_a_crash_inside_a_part_keeps_the_parts_before_it(tmp_path):
    def die_at_page_12(pages):  # noqa: ANN001, ANN202
        if pages and pages[0] <= 12 <= pages[1]:
            raise RuntimeError("worker killed")

    with pytest.raises(RuntimeError, match="worker killed"):
        _parse(FakePdfPartParser(pages=23, on_call=die_at_page_12), 5, store=_store(tmp_path))
    retry = FakePdfPartParser(pages=23)
    _parse(retry, 5, store=_store(tmp_path))
    assert retry.calls == [(11, 15), (16, 20), (21, 23)]


@pytest.mark.parametrize(
    "other",
    [{"version": 2}, {"digest": "cd" * 32}, {"size": 1001}, {"part_pages": 4}, {"document_id": "doc-2"}],
)
def test_saved_parts_are_never_reused_for_another_version_file_or_part_size(tmp_path, other):
    _parse(FakePdfPartParser(pages=12), 5, store=_store(tmp_path))
    part_pages = other.get("part_pages", 5)
    again = FakePdfPartParser(pages=12)
    _parse(again, part_pages, store=_store(tmp_path, **other))
    assert again.calls == [r for r in part_ranges(12, part_pages)]


def test_an_unreadable_saved_part_is_parsed_again(tmp_path):
    store = _store(tmp_path)
    _parse(FakePdfPartParser(pages=12), 5, store=store)
    store.files.put(store._key(1), b"not gzip")
    retry = FakePdfPartParser(pages=12)
    doc = _parse(retry, 5, store=store)
    assert retry.calls == [(6, 10)]
    assert doc == _parse(FakePdfPartParser(pages=12), 0)


def test_a_saved_part_round_trips_exactly(tmp_path):
    store = _store(tmp_path)
    part = FakePdfPartParser(pages=12).part(6, 10)
    part.ocr_confidence = {7: 91.25}
    part.ocr_skipped, part.page_warnings = [8], ["page 9 could not be read (KeyError)"]
    part.lines[0].table = [["a", None], ["1", "2"]]
    store.save(1, part)
    assert store.load(1) == part
    assert store.load(2) is None


def test_a_file_that_is_not_a_pdf_is_parsed_whole_in_one_call():
    from ingestion.parsing.model import ParsedDocument

    calls = []

    def markdown(options, on_progress):  # noqa: ANN001, ANN202
        calls.append(options.pages)
        return ParsedDocument(title="Guide", mime_type="text/markdown", doc_type="md")

    doc = parse_in_parts(Path("g.md"), filename="g.md", part_pages=5, timeout_s=10, memory_mb=512,
                         options=ParseOptions(), run_part=markdown)  # fmt: skip
    assert doc.doc_type == "md" and calls == [(1, 5)]


def _real_pdf(pages: int) -> bytes:
    """Headings of two sizes (the larger one on page 1 only), body text, a running header and footer."""
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    c = canvas.Canvas(out, pagesize=(612, 792))
    for n in range(1, pages + 1):
        c.setFont("Helvetica", 9)
        c.drawString(72, 770, "Kestrel Hub service manual")
        c.drawString(300, 30, f"Page {n}")
        y = 720
        if n == 1:
            c.setFont("Helvetica-Bold", 22)
            c.drawString(72, y, "Kestrel Hub Manual")
            y -= 40
        if n % 4 == 1:
            c.setFont("Helvetica-Bold", 15)
            c.drawString(72, y, f"Chapter {n // 4 + 1} maintenance")
            y -= 30
        c.setFont("Helvetica", 11)
        for row in range(8):
            part = ("fan", "filter", "hinge", "relay", "sensor", "valve", "belt")[(n + row) % 7]
            c.drawString(72, y - row * 16, f"Page {n} line {row}: step {n}.{row} checks the {part}.")
        c.showPage()
    c.save()
    return out.getvalue()


def test_real_pdf_read_in_parts_and_saved_assembles_to_the_one_shot_parse(tmp_path):
    data = _real_pdf(11)
    whole = parse_pdf(data)
    store = _store(tmp_path, part_pages=4)
    for i, (a, b) in enumerate(part_ranges(11, 4)):
        store.save(i, read_pages(data, a, b))
    parts = [store.load(i) for i in range(3)]
    assert all(isinstance(p, PdfPart) for p in parts)
    merged = assemble(parts)
    assert merged == whole
    assert "Kestrel Hub service manual" not in " ".join(e.text for e in merged.elements)  # running header: dropped
    page6 = next(e for e in merged.elements if e.text.startswith("Page 6 line 0"))
    assert page6.section_path == ("Kestrel Hub Manual", "Chapter 2 maintenance")
    # why parts hold lines, not elements: made from part 2 alone, its chapter headings would be the top level
    from ingestion.parsing.model import ElementBuilder
    from ingestion.parsing.pdf import _emit

    alone = ElementBuilder()
    _emit(parts[1].lines, alone)
    assert [e.level for e in alone.elements if e.kind == "title"] == [1]
    assert [e.level for e in merged.elements if e.text == "Chapter 2 maintenance"] == [2]


def test_parts_that_leave_a_gap_are_refused():
    parser = FakePdfPartParser(pages=12)
    with pytest.raises(AppError, match="do not follow"):
        assemble([parser.part(1, 5), parser.part(7, 10)])
    with pytest.raises(AppError, match="end at page 10 of 12"):
        assemble([parser.part(1, 5), parser.part(6, 10)])


# --- in the pipeline: lease lost after some parts, the next worker resumes, the parts go when indexed ---------------


@pytest.fixture
def pipeline_setup(make_settings, tmp_path):  # noqa: ANN201
    from ingestion.pipeline import IngestPipeline
    from retrieval.indexes import Indexes
    from tests.fakes import FakeRecordingIndex

    settings = make_settings(ingestion={"parse_part_pages": 5, "lease_s": 60, "max_attempts": 3})
    migrate_database(settings)
    db = Database(settings.database_url)
    svc = IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover())
    idx = FakeRecordingIndex()
    pipeline = IngestPipeline(
        settings=settings,
        db=db,
        indexes=Indexes(keyword=idx, vector=idx, graph=idx, lock_path=tmp_path / "lock"),  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        extractor=FakeExtractor(),
    )
    yield svc, pipeline
    db.dispose()


def _parts_dir(svc: IngestService, document_id: str) -> Path:
    return Path(svc.settings.upload_dir) / parts_prefix(document_id)


def test_pipeline_resumes_a_job_whose_worker_lost_its_lease_from_the_saved_parts(pipeline_setup):
    svc, pipeline = pipeline_setup
    sub = svc.submit(tenant_id="t", filename="manual.pdf", data=b"%PDF-1.7 stand-in for a 23-page manual")
    doc_id = sub.document.id
    with svc.db.session() as s:
        job_id = s.query(IngestionJob).filter_by(document_id=doc_id).one().id

    def steal_lease_at_page_11(pages):  # noqa: ANN001, ANN202
        if pages == (11, 15):
            with svc.db.session() as s:
                s.get(IngestionJob, job_id).lease_owner = "w2"  # w1 stalled past its lease; w2 took the job

    first = FakePdfPartParser(pages=23, on_call=steal_lease_at_page_11)
    pipeline.run_part = first
    assert pipeline.run(job_id, owner="w1") == "parsing"  # w1 stops at the next part boundary
    assert first.calls == [(1, 5), (6, 10), (11, 15)]
    assert len(list(_parts_dir(svc, doc_id).rglob("part-*.json.gz"))) == 3

    second = FakePdfPartParser(pages=23)
    pipeline.run_part = second
    assert pipeline.run(job_id, owner="w2") == "indexed"
    assert second.calls == [(16, 20), (21, 23)]
    with svc.db.session() as s:
        job = s.get(IngestionJob, job_id)
        parsing = job.stages["parsing"]
        assert job.attempts == 2
        assert (parsing["parts_done"], parsing["parts_total"], parsing["resumed_from_page"]) == (5, 5, 16)
        assert parsing["detail"] == "23 of 23"
        assert s.get(Document, doc_id).page_count == 23
    assert not _parts_dir(svc, doc_id).exists()  # indexed: no parts left behind


def test_parts_of_a_deleted_document_are_removed(pipeline_setup):
    svc, pipeline = pipeline_setup
    sub = svc.submit(tenant_id="t", filename="manual.pdf", data=b"%PDF-1.7 another stand-in")
    doc_id = sub.document.id
    with svc.db.session() as s:
        job_id = s.query(IngestionJob).filter_by(document_id=doc_id).one().id

    def die(pages):  # noqa: ANN001, ANN202
        if pages == (6, 10):
            raise KeyboardInterrupt  # the worker stops dead (not an error the job records)

    pipeline.run_part = FakePdfPartParser(pages=23, on_call=die)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(job_id, owner="w1")
    assert len(list(_parts_dir(svc, doc_id).rglob("part-*.json.gz"))) == 1
    svc.delete(tenant_id="t", document_id=doc_id)
    assert not _parts_dir(svc, doc_id).exists()


def test_parts_of_a_document_that_fails_are_removed(pipeline_setup):
    svc, pipeline = pipeline_setup
    sub = svc.submit(tenant_id="t", filename="manual.pdf", data=b"%PDF-1.7 a third stand-in")
    doc_id = sub.document.id
    with svc.db.session() as s:
        job_id = s.query(IngestionJob).filter_by(document_id=doc_id).one().id

    def broken(pages):  # noqa: ANN001, ANN202
        if pages == (11, 15):
            from ingestion.parsing.model import parse_failed

            raise parse_failed("parser crashed (segmentation fault)")

    pipeline.run_part = FakePdfPartParser(pages=23, on_call=broken)
    assert pipeline.run(job_id, owner="w1") == "failed"
    assert not _parts_dir(svc, doc_id).exists()


def test_local_store_deletes_a_prefix_and_nothing_else(tmp_path):
    files = LocalFileStore(tmp_path)
    files.put(".parse-parts/d1/v1/part-00000.json.gz", b"a")
    files.put(".parse-parts/d10/v1/part-00000.json.gz", b"b")
    files.put("t/ab/abcd", b"c")
    files.delete_prefix(".parse-parts/d1")
    files.delete_prefix(".parse-parts/nothing-here")
    assert not files.exists(".parse-parts/d1/v1/part-00000.json.gz")
    assert files.exists(".parse-parts/d10/v1/part-00000.json.gz") and files.exists("t/ab/abcd")


def test_parts_of_a_job_the_sweeper_gives_up_on_are_removed(pipeline_setup):
    import datetime as dt

    from ingestion import state

    svc, pipeline = pipeline_setup
    sub = svc.submit(tenant_id="t", filename="manual.pdf", data=b"%PDF-1.7 a fourth stand-in")
    doc_id = sub.document.id
    with svc.db.session() as s:
        job_id = s.query(IngestionJob).filter_by(document_id=doc_id).one().id

    def die(pages):  # noqa: ANN001, ANN202
        if pages == (6, 10):
            raise KeyboardInterrupt

    for attempt in (1, 2, 3):  # the worker dies after one part on every attempt (max_attempts 3)
        pipeline.run_part = FakePdfPartParser(pages=23, on_call=die)
        with pytest.raises(KeyboardInterrupt):
            pipeline.run(job_id, owner=f"w{attempt}")
        with svc.db.session() as s:
            s.get(IngestionJob, job_id).lease_expires_at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
        assert _parts_dir(svc, doc_id).exists()
    assert svc.sweep() == 0
    assert state.job_status(svc.db, job_id) == "failed"
    assert not _parts_dir(svc, doc_id).exists()

"""One owner of ingestion state: the transition rules of ``ingestion.state``, and a guard that keeps every status
write and raw session access of the ingestion package inside that module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.models import Document, IngestionJob
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.types import DocumentStatus, StageStatus
from ingestion import state
from ingestion.service import IngestService
from ingestion.state import InvalidTransition, JobTracker, check_transition
from tests.fakes import FakeDispatcher, FakeIndexRemover

pytestmark = pytest.mark.unit

S = DocumentStatus
ROOT = Path(__file__).resolve().parents[2]
INGESTION = ROOT / "ingestion"


# --- the rules ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("terminal", [S.INDEXED, S.FAILED])
def test_a_terminal_status_goes_back_to_queued_only_by_a_requeue(terminal):
    with pytest.raises(InvalidTransition):
        check_transition(terminal, S.QUEUED)
    assert check_transition(terminal, S.QUEUED, requeue=True) is S.QUEUED


@pytest.mark.parametrize("terminal", [S.INDEXED, S.FAILED])
@pytest.mark.parametrize("target", [S.PARSING, S.CHUNKING, S.EMBEDDING, S.INDEXING, S.INDEXED])
def test_nothing_else_leaves_a_terminal_status(terminal, target):
    with pytest.raises(InvalidTransition):
        check_transition(terminal, target)


@pytest.mark.parametrize("terminal", [S.INDEXED, S.FAILED])
def test_a_terminal_status_does_not_fail_again(terminal):
    with pytest.raises(InvalidTransition):
        check_transition(terminal, S.FAILED, reason="again")


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_failed_always_carries_a_reason(reason):
    with pytest.raises(InvalidTransition, match="reason"):
        check_transition(S.EMBEDDING, S.FAILED, reason=reason)
    assert check_transition(S.EMBEDDING, S.FAILED, reason="boom") is S.FAILED


@pytest.mark.parametrize("current", [S.QUEUED, S.PARSING, S.CHUNKING, S.EMBEDDING])
def test_only_an_indexing_job_becomes_indexed(current):
    with pytest.raises(InvalidTransition):
        check_transition(current, S.INDEXED)
    assert check_transition(S.INDEXING, S.INDEXED) is S.INDEXED


@pytest.mark.parametrize("current", [S.QUEUED, S.PARSING, S.CHUNKING, S.EMBEDDING, S.INDEXING])
def test_a_running_job_may_start_any_stage_again_or_go_back_to_the_queue(current):
    # a re-claimed job (its worker died in "embedding") starts again at parsing; a retry-later queues it
    assert check_transition(current, S.PARSING) is S.PARSING
    assert check_transition(current, S.QUEUED) is S.QUEUED
    assert check_transition(current, S.FAILED, reason="x") is S.FAILED


def test_stored_strings_are_accepted_and_unknown_ones_refused():
    assert check_transition("indexing", S.INDEXED) is S.INDEXED
    with pytest.raises(ValueError):
        check_transition("exploded", S.QUEUED)


# --- the rules on a real (SQLite) database --------------------------------------------------------------------------


@pytest.fixture
def service(make_settings):
    settings = make_settings(ingestion={"max_attempts": 2, "lease_s": 60})
    migrate_database(settings)
    db = Database(settings.database_url)
    yield IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover())
    db.dispose()


def _job(service, document_id: str) -> IngestionJob:  # noqa: ANN001
    with service.db.session() as s:
        job = repo.latest_job(session=s, document_id=document_id)
        s.expunge(job)
        return job


def _doc(service, document_id: str) -> Document:  # noqa: ANN001
    with service.db.session() as s:
        doc = s.get(Document, document_id)
        s.expunge(doc)
        return doc


def _run_to_indexed(service, job_id: str, owner: str = "w1") -> None:  # noqa: ANN001
    with service.db.session() as s:
        assert state.claim(session=s, job_id=job_id, owner=owner, lease_s=60, max_attempts=2) is not None
    tracker = JobTracker(service.db, job_id, owner=owner)
    for stage in (S.PARSING, S.CHUNKING, S.EMBEDDING, S.INDEXING):
        with tracker.stage(stage):
            pass
    tracker.succeed()


def test_a_job_runs_through_its_stages_and_the_document_mirrors_it(service):
    doc_id = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\nx").document.id
    job = _job(service, doc_id)
    assert job.status == S.QUEUED and set(job.stages) == {"parsing", "chunking", "embedding", "indexing"}
    assert {e["status"] for e in job.stages.values()} == {StageStatus.PENDING}
    _run_to_indexed(service, job.id)
    job, doc = _job(service, doc_id), _doc(service, doc_id)
    assert job.status == doc.status == S.INDEXED and job.lease_owner is None
    assert {e["status"] for e in job.stages.values()} == {StageStatus.DONE}


def test_a_stage_cannot_begin_on_a_finished_job_and_it_stays_finished(service):
    doc_id = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\nx").document.id
    job_id = _job(service, doc_id).id
    _run_to_indexed(service, job_id)
    with pytest.raises(InvalidTransition), JobTracker(service.db, job_id).stage(S.PARSING):
        pass
    assert _job(service, doc_id).status == S.INDEXED


def test_failing_needs_a_reason_and_leaves_the_job_untouched_without_one(service):
    doc_id = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\nx").document.id
    job_id = _job(service, doc_id).id
    with pytest.raises(InvalidTransition):
        state.mark_failed(service.db, job_id, "")
    assert _job(service, doc_id).status == S.QUEUED
    state.mark_failed(service.db, job_id, "the parser rejected it")
    job, doc = _job(service, doc_id), _doc(service, doc_id)
    assert (job.status, job.failure_reason) == (S.FAILED, "the parser rejected it")
    assert (doc.status, doc.failure_reason) == (S.FAILED, "the parser rejected it")


def test_reindex_queues_a_finished_document_but_not_a_running_one(service):
    doc_id = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\nx").document.id
    with pytest.raises(AppError) as exc:
        service.reindex(tenant_id="t", document_id=doc_id)
    assert exc.value.code == ErrorCode.CONFLICT
    state.mark_failed(service.db, _job(service, doc_id).id, "broken")
    doc = service.reindex(tenant_id="t", document_id=doc_id)
    assert (doc.status, doc.failure_reason) == (S.QUEUED, None)
    assert _job(service, doc_id).status == S.QUEUED


def test_an_older_job_no_longer_writes_the_document_after_a_new_version_is_queued(service):
    first = service.submit(tenant_id="t", filename="a.md", data=b"v1").document
    old_job = _job(service, first.id).id
    service.submit(tenant_id="t", filename="a.md", data=b"v2")
    _run_to_indexed(service, old_job)  # the version-1 worker finishes after version 2 was queued
    doc = _doc(service, first.id)
    assert (doc.version, doc.status) == (2, S.QUEUED)


def test_the_sweeper_fails_a_job_out_of_attempts_with_a_reason_and_takes_its_lease(service):
    doc_id = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\nx").document.id
    job_id = _job(service, doc_id).id
    with service.db.session() as s:
        job = s.get(IngestionJob, job_id)
        job.attempts, job.dispatched = 2, False
    assert state.sweep_stale(service.db, max_attempts=2) == []
    job, doc = _job(service, doc_id), _doc(service, doc_id)
    assert job.status == doc.status == S.FAILED and "gave up after 2 attempts" in doc.failure_reason
    assert job.lease_owner is None


# --- the guard: one owner -------------------------------------------------------------------------------------------

STATUS_WORDS = {s.value for s in DocumentStatus} | {s.value for s in StageStatus}
SESSION_NAMES = {"s", "session", "sess"}
SESSION_CALLS = {"get", "query", "execute", "scalar", "scalars", "add", "add_all", "delete", "merge", "flush"}


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: list[str] = []
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if node.value in STATUS_WORDS:
                found.append(f"{where}:{node.lineno}: bare status literal {node.value!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if isinstance(target, ast.Name) and target.id in SESSION_NAMES and node.func.attr in SESSION_CALLS:
                found.append(f"{where}:{node.lineno}: raw session access {target.id}.{node.func.attr}(...)")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for el in t.elts if isinstance(t, ast.Tuple) else [t]:
                    if isinstance(el, ast.Attribute) and el.attr in {"status", "failure_reason"}:
                        found.append(f"{where}:{node.lineno}: writes .{el.attr} outside ingestion/state.py")
    return found


def test_only_the_state_module_writes_status_or_touches_a_session_in_ingestion():
    files = [p for p in sorted(INGESTION.rglob("*.py")) if p != INGESTION / "state.py"]
    assert INGESTION / "service.py" in files and INGESTION / "pipeline.py" in files
    offences = [o for p in files for o in _offences(p)]
    assert offences == [], "ingestion state belongs to ingestion/state.py:\n" + "\n".join(offences)


def test_the_guard_sees_what_it_forbids(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        'def f(s, doc):\n    """queued"""\n    doc.status = "failed"\n    s.query(doc)\n    doc.failure_reason = None\n'
    )
    offences = _offences(probe)
    assert len(offences) == 4, offences  # the literal, the .status write, s.query, the .failure_reason write

"""Schemathesis fuzzing of the OpenAPI schema: no 500 for any input, with valid and with missing credentials.

Runs on a real SQLite database and the real ingest service (a Fake dispatcher stands in for the worker) and fake
retrieval/answer components, so it exercises the API's own validation and error mapping."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from app.main import create_app
from core.db import repositories as repo
from core.settings import Settings
from core.types import Role
from ingestion.service import IngestService
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

STATE: dict[str, str] = {}


class FakeDispatcher:
    def dispatch(self, job_id: str) -> None:
        pass


class FakeIndexRemover:
    def delete(self, document_id: str, *, session: object = None) -> None:
        pass


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path_factory.mktemp("fuzz") / "data",
        api={"requests_per_minute": 0, "tokens_per_minute": 0},
    )
    container = fake_container(settings, dispatcher=FakeDispatcher())
    db = container.db
    container.ingest = IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover())
    with db.session() as s:
        _, STATE["key"] = repo.create_api_key(session=s, tenant_id="fuzz", name="fuzz", role=Role.ADMIN)
    app = create_app(settings, container=container, sweeper=False)
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    db.dispose()


def _operations(schema):  # noqa: ANN001, ANN202
    ops = []
    for result in schema.get_all_operations():
        ops.append(result.ok())
    return ops


def _check_operation(
    op,
    headers: dict[str, str],
    max_examples: int,
    failures: list[str],  # noqa: ANN001
    calls: dict[str, int],
) -> None:
    label = op.label

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=op.as_strategy())
    def check(case) -> None:  # noqa: ANN001
        response = case.call(headers=headers)
        calls[label] = calls.get(label, 0) + 1
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:200]}")
        elif response.status_code >= 400 and "json" in response.headers.get("content-type", ""):
            body = response.json()
            if not (isinstance(body, dict) and "code" in body.get("error", {})):
                failures.append(f"{case.method} {case.formatted_path}: error without a code: {body}")

    check()


def _fuzz(schema, headers: dict[str, str], max_examples: int) -> list[str]:  # noqa: ANN001
    failures: list[str] = []
    calls: dict[str, int] = {}
    ops = _operations(schema)
    assert len(ops) >= 15, "the schema lost its operations"
    for op in ops:
        _check_operation(op, headers, max_examples, failures, calls)
    assert set(calls) == {op.label for op in ops}, "some operations were never called"
    return failures


def test_no_server_error_with_a_valid_key(api_schema):
    failures = _fuzz(api_schema, {"Authorization": f"Bearer {STATE['key']}"}, max_examples=15)
    assert not failures, "\n".join(failures[:20])


def test_no_server_error_without_a_key(api_schema):
    failures = _fuzz(api_schema, {}, max_examples=5)
    assert not failures, "\n".join(failures[:20])

"""Fakes shared by the unit tests: one definition each (integration tests use real parts, never these).

A fake here is a small, honest stand-in for one protocol of the product (a dispatcher, an index, an embedder, an
LLM...), recording what it was asked so a test can assert on it. Tests import them (``from tests.fakes import ...``);
``tests/unit/test_fakes_shared.py`` fails if a test file defines a ``Fake*`` class of its own.
"""

from __future__ import annotations

# --- ingestion ------------------------------------------------------------------------------------------------------


class FakeDispatcher:
    """Stands in for the broker: records the job ids handed to it; while ``down`` it raises like a broker that
    cannot be reached."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.down = False

    def dispatch(self, job_id: str) -> None:
        if self.down:
            raise ConnectionError("broker unreachable")
        self.sent.append(job_id)


class FakeIndexRemover:
    """The indexes as the ingest service sees them on delete: records the deleted document ids."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, document_id: str) -> None:
        self.deleted.append(document_id)

"""Fakes shared by unit tests (one place, so every test stands in for a part the same way)."""

from __future__ import annotations


class FakeDispatcher:
    """Stands in for the broker: remembers the job ids it was handed; ``down`` makes it raise like a broker outage."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.down = False

    def dispatch(self, job_id: str) -> None:
        if self.down:
            raise ConnectionError("broker unreachable")
        self.sent.append(job_id)


class FakeIndexes:
    """Stands in for the search indexes when deleting: remembers which documents were removed."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, document_id: str) -> None:
        self.deleted.append(document_id)

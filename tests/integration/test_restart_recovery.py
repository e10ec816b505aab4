"""Embedded mode with real ``kbqa serve`` processes (issue 12, items 4 and 5): the queue moves again within seconds
after a crash (SIGKILL) and a restart, with nothing lost and no chunk written twice; and a small upload of tenant B
is indexed while tenant A's long document is still being ingested."""

from __future__ import annotations

import pytest

from tests.ingest_scenarios import RUNNING, TERMINAL, restart_recovery, small_during_long

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_queue_moves_within_seconds_after_kill_and_restart(tmp_path):
    r = restart_recovery(tmp_path)
    states = sorted({s for s, _ in r.at_kill.values()})
    print(
        f"\nkilled with {len(r.at_kill)} of {r.uploaded} unfinished ({', '.join(states)}); restart ready in "
        f"{r.ready_s:.1f} s; queue moving {r.moving_s:.2f} s after ready "
        f"({r.moving_since_start_s:.1f} s after the process started); all done {r.still_open_s:.1f} s after ready"
    )
    assert any(s in RUNNING for s, _ in r.at_kill.values()), r.at_kill  # a job was in flight at the kill
    assert sum(s == "queued" for s, _ in r.at_kill.values()) >= 3, r.at_kill
    assert r.moving_s < 10, f"no job left unfinished by the kill moved within 10 s of the restart ({r.moving_s} s)"
    for doc in r.final.values():
        assert doc["status"] in TERMINAL, doc
        if doc["status"] == "failed":
            assert doc["failure_reason"], doc
        else:
            assert doc["chunk_count"] > 0, doc
    assert r.duplicates == []


def test_small_upload_indexed_while_a_long_document_ingests(tmp_path):
    r = small_during_long(tmp_path, wait_long=False, timeout_s=120)
    print(
        f"\ntenant B's small upload {r.small_status} in {r.small_s:.1f} s; tenant A's long document then: "
        f"{r.long_status_then}"
    )
    assert r.small_status == "indexed"
    assert r.long_status_then not in TERMINAL, (
        "tenant A's long document finished before tenant B's small upload was indexed"
    )

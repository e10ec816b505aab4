"""Embedded-mode recovery and fairness with real ``kbqa serve`` processes (issue 12, items 4 and 5).

- queue moving again after kill+restart: upload a batch of generated articles, SIGKILL the server while one job
  embeds and others wait, start it again on the same data dir; seconds from the restart answering ``/readyz`` until a
  job left unfinished by the kill is taken again (its attempt count or status changes). Also checks that every
  document ends ``indexed`` or ``failed`` with a reason and that no chunk was stored twice.
- small upload while a long document ingests: tenant A uploads a long generated manual (``--long-paragraphs``
  chunks) and a backlog; tenant B uploads one small article; seconds until B's is indexed, and whether A's long
  document was still running then.

The scenarios are the ones tests/integration/test_restart_recovery.py asserts on (tests/ingest_scenarios.py).

    python benchmarks/bench_ingest_recovery.py [--documents 12] [--long-paragraphs 800]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.ingest_scenarios import TERMINAL, restart_recovery, small_during_long  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--documents", type=int, default=12, help="articles uploaded before the kill")
    ap.add_argument("--long-paragraphs", type=int, default=800, help="chunks of tenant A's long document (about)")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-restart-") as tmp:
        r = restart_recovery(Path(tmp), documents=args.documents)
    unfinished = [d for d in r.final.values() if d["status"] not in TERMINAL]
    reasonless = [d for d in r.final.values() if d["status"] == "failed" and not d["failure_reason"]]
    ok &= r.moving_s < 10 and not unfinished and not reasonless and not r.duplicates
    indexed = sum(d["status"] == "indexed" for d in r.final.values())
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-fair-") as tmp:
        f = small_during_long(Path(tmp), long_paragraphs=args.long_paragraphs)
    running = f.long_status_then not in TERMINAL
    ok &= f.small_status == "indexed" and running

    long_s = f"{f.long_s:.1f} s" if f.long_s != float("inf") else "not finished in the time limit"
    print("| measure (embedded mode, inline_workers default) | result | target |")
    print("|---|---|---|")
    after = (
        f"{indexed} indexed, {len(r.final) - indexed - len(unfinished)} failed, {len(unfinished)} stuck, "
        f"{len(r.duplicates)} duplicate-chunk findings"
    )
    print(
        f"| queue moving again after kill+restart (embedded) | {r.moving_s:.2f} s after /readyz "
        f"({r.moving_since_start_s:.1f} s after the process started; ready after {r.ready_s:.1f} s; "
        f"{len(r.at_kill)} of {r.uploaded} jobs unfinished at the kill; afterwards {after}) | < 10 s |"
    )
    print(
        f"| small upload indexed while a long document ingests | {f.small_s:.1f} s (long doc still running: "
        f"{'yes' if running else 'no'}, {f.long_status_then}; long doc of {f.long_chunks} chunks took {long_s}) "
        f"| < 15 s |"
    )
    for problem in r.duplicates:
        print(f"duplicate: {problem}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""On-disk form of one tenant's graph: a pickle snapshot plus an append-only journal of document edits.

Layout under ``<root>/<sha256(tenant)[:16]>/``: ``TENANT`` (the tenant id), ``graph.pkl`` (snapshot),
``journal.bin`` (length-prefixed pickled ``("upsert", doc_id, chunks, entities)`` / ``("delete", doc_id)`` records)
and ``write.lock`` (``flock``-ed by the writing process).

- A write appends one journal record (flushed and fsynced): milliseconds, whatever the graph size.
- ``compact`` writes a new snapshot to a temp file, fsyncs it, ``os.replace``s it over the old one, then empties the
  journal. Replaying a record twice is harmless (upserts replace, deletes of unknown ids are no-ops), so a reader that
  sees the new snapshot with the old journal still ends in the right state.
- A torn last record (crash mid-append) is ignored on load.

Pickle was measured against node-link JSON and rebuilding from the journal (``benchmarks/bench_graph.py``); it is the
fastest to load by a wide margin.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from retrieval.graph.store import TenantGraph

_LEN = struct.Struct("<I")
SNAPSHOT, JOURNAL, TENANT, LOCK = "graph.pkl", "journal.bin", "TENANT", "write.lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: single-process use only
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """Exclusive advisory lock (``flock``) serialising writing processes of one tenant, compaction included.

    Without it, a process compacting a stale graph could truncate a record another process had just appended.
    """
    with open(folder / LOCK, "a+b") as fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def tenant_dir(root: Path, tenant_id: str) -> Path:
    return root / hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:16]


@dataclass(slots=True)
class DiskMark:
    """What of the files a loaded graph already reflects (to notice another process's writes cheaply)."""

    snapshot: tuple[int, int] | None  # (inode, mtime_ns)
    journal_offset: int


def snapshot_id(folder: Path) -> tuple[int, int] | None:
    """(inode, mtime_ns) of the snapshot file, or None when there is none yet."""
    try:
        st = (folder / SNAPSHOT).stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def journal_size(folder: Path) -> int:
    try:
        return (folder / JOURNAL).stat().st_size
    except FileNotFoundError:
        return 0


def append_record(folder: Path, record: tuple[Any, ...]) -> int:
    """Append one record to the journal; returns the journal size after it."""
    payload = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
    with open(folder / JOURNAL, "ab") as fh:
        fh.write(_LEN.pack(len(payload)) + payload)
        fh.flush()
        os.fsync(fh.fileno())
        return fh.tell()


def read_records(folder: Path, offset: int) -> tuple[list[tuple[Any, ...]], int]:
    """Complete records from ``offset`` on, and the offset just past the last complete one."""
    try:
        with open(folder / JOURNAL, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return [], 0
    records, pos = [], 0
    while pos + _LEN.size <= len(data):
        (size,) = _LEN.unpack_from(data, pos)
        if pos + _LEN.size + size > len(data):
            break
        records.append(pickle.loads(data[pos + _LEN.size : pos + _LEN.size + size]))
        pos += _LEN.size + size
    return records, offset + pos


def apply_record(tg: TenantGraph, record: tuple[Any, ...]) -> None:
    if record[0] == "upsert":
        tg.upsert_document(record[1], record[2], record[3])
    elif record[0] == "delete":
        tg.delete_document(record[1])
    else:
        raise ValueError(f"unknown journal record {record[0]!r}")


def _load_without_gc(fh: BinaryIO) -> dict[str, Any]:
    """``pickle.load`` with the cyclic GC paused: it would otherwise rescan the millions of new dicts many times."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        state: dict[str, Any] = pickle.load(fh)
    finally:
        if enabled:
            gc.enable()
    return state


def load(folder: Path, tenant_id: str, *, max_cooc_entities: int) -> tuple[TenantGraph, DiskMark, int]:
    """Snapshot (if any) plus the journal replayed on top; also returns how many journal records were replayed."""
    snap = folder / SNAPSHOT
    mark = snapshot_id(folder)
    if mark is not None:
        with open(snap, "rb") as fh:
            tg = TenantGraph.from_state(_load_without_gc(fh))
    else:
        tg = TenantGraph(tenant_id, max_cooc_entities=max_cooc_entities)
    records, offset = read_records(folder, 0)
    for rec in records:
        apply_record(tg, rec)
    return tg, DiskMark(mark, offset), len(records)


def changed(folder: Path, mark: DiskMark) -> bool:
    """Whether another writer touched the files since ``mark`` (two ``stat`` calls)."""
    return snapshot_id(folder) != mark.snapshot or journal_size(folder) != mark.journal_offset


def write_snapshot(folder: Path, tg: TenantGraph) -> DiskMark:
    """Atomically replace the snapshot with ``tg`` and empty the journal."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{SNAPSHOT}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(tg.to_state(), fh, protocol=pickle.HIGHEST_PROTOCOL)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / SNAPSHOT)
    with open(folder / JOURNAL, "wb") as fh:
        fh.flush()
        os.fsync(fh.fileno())
    return DiskMark(snapshot_id(folder), 0)


def ensure_folder(folder: Path, tenant_id: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / TENANT
    if not marker.exists():
        tmp = folder / f"{TENANT}.{os.getpid()}.tmp"
        tmp.write_text(tenant_id, encoding="utf-8")
        os.replace(tmp, marker)

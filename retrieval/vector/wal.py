"""Write-ahead log of the embedded vector index: one framed record per document write.

Record: ``b"KBQW"``, u32 header length, JSON header, u64 vector byte count, float16 vectors (row-major).
A torn record at the end (crash mid-append) is ignored on replay.
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from core.types import ChunkRecord
from retrieval._timeutil import epoch_micros

MAGIC = b"KBQW"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(slots=True)
class WalRecord:
    document_id: str
    chunks: list[ChunkRecord]
    vectors: np.ndarray


def _chunk_meta(c: ChunkRecord) -> dict[str, object]:
    return {
        "id": c.id,
        "t": c.tenant_id,
        "a": list(c.acl_groups),
        "g": list(c.tags),
        "y": c.doc_type,
        "c": None if c.created_at is None else epoch_micros(c.created_at),
    }


def _chunk_from(document_id: str, m: dict[str, Any]) -> ChunkRecord:
    created = m["c"]
    return ChunkRecord(
        id=str(m["id"]),
        tenant_id=str(m["t"]),
        document_id=document_id,
        document_version=0,
        title="",
        text="",
        acl_groups=tuple(m["a"]),
        tags=tuple(m["g"]),
        doc_type=str(m["y"]),
        created_at=None if created is None else _EPOCH + dt.timedelta(microseconds=int(created)),
    )


def encode(document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> bytes:
    header = json.dumps({"d": document_id, "c": [_chunk_meta(c) for c in chunks]}).encode()
    body = np.ascontiguousarray(vectors, dtype=np.float16).tobytes()
    return MAGIC + struct.pack("<I", len(header)) + header + struct.pack("<Q", len(body)) + body


def read_records(path: Path, offset: int, dim: int) -> Iterator[tuple[WalRecord, int]]:
    """Yield ``(record, end_offset)`` for every complete record from ``offset``."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        fh.seek(offset)
        while True:
            rec = _read_one(fh, dim)
            if rec is None:
                return
            yield rec, fh.tell()


def _read_one(fh: BinaryIO, dim: int) -> WalRecord | None:
    head = fh.read(8)
    if len(head) < 8 or head[:4] != MAGIC:
        return None
    (hlen,) = struct.unpack("<I", head[4:])
    header = fh.read(hlen)
    size = fh.read(8)
    if len(header) < hlen or len(size) < 8:
        return None
    (blen,) = struct.unpack("<Q", size)
    body = fh.read(blen)
    if len(body) < blen:
        return None
    meta = json.loads(header)
    vectors = np.frombuffer(body, dtype=np.float16).reshape(-1, dim).astype(np.float32)
    return WalRecord(meta["d"], [_chunk_from(meta["d"], m) for m in meta["c"]], vectors)

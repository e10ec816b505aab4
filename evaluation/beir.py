"""BEIR-format datasets for retrieval evaluation, an in-memory chunk store, and an on-disk embedding cache.

A BEIR dataset folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``) and
``qrels.tsv`` (header ``query-id corpus-id score``, tab-separated). Each corpus document becomes one chunk whose id is
the corpus ``_id``, so runs compare directly with the qrels; :func:`split_like_ingestion` instead splits each document
as the product splits an upload (a run then ranks documents by their best chunk).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.types import ChunkRecord

log = logging.getLogger(__name__)

EVAL_TENANT = "eval"
#: Bump when the text handed to the embedder for a corpus document changes (invalidates cached embeddings).
DOC_TEXT_VERSION = "title-newline-text-v1"
#: documents split into chunks: a query retrieves this many chunks per document of the run's depth
CHUNKS_PER_DOCUMENT_DEPTH = 3


@dataclass(slots=True)
class BeirDataset:
    name: str
    chunks: list[ChunkRecord]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    #: sha256 of the corpus file bytes (part of every cache key).
    corpus_hash: str
    extra: dict[str, object] = field(default_factory=dict)
    #: "" when each document is one chunk; else how the documents were split (part of the embedding cache key)
    chunking: str = ""

    def embed_text(self, chunk: ChunkRecord) -> str:
        """What the embedder sees: title and text of a whole document; a chunk's own text (its heading path leads it,
        as in the ingestion pipeline, which embeds ``ChunkRecord.text``)."""
        return chunk.text if self.chunking else doc_text(chunk)

    def cache_parts(self) -> tuple[str, ...]:
        """What keys the cached embeddings and entities of this corpus besides the model: its bytes and its split."""
        return (self.corpus_hash, self.chunking) if self.chunking else (self.corpus_hash,)

    def chunk_depth(self, documents: int) -> int:
        """Chunks a query retrieves for a run of ``documents`` documents (each document ranks at its best chunk)."""
        return documents * CHUNKS_PER_DOCUMENT_DEPTH if self.chunking else documents


def doc_text(chunk: ChunkRecord) -> str:
    """The text embedded for a corpus document (BEIR convention: title then text)."""
    return f"{chunk.title}\n{chunk.text}".strip()


def load_beir(dataset_dir: Path, *, max_queries: int | None = None) -> BeirDataset:
    """Load a BEIR folder; only queries with at least one relevant document are kept (first ``max_queries``)."""
    corpus_path = dataset_dir / "corpus.jsonl"
    raw = corpus_path.read_bytes()
    chunks: list[ChunkRecord] = []
    for line in raw.decode("utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        doc_id = str(row["_id"])
        chunks.append(
            ChunkRecord(
                id=doc_id,
                tenant_id=EVAL_TENANT,
                document_id=doc_id,
                document_version=1,
                title=row.get("title") or "",
                text=row.get("text") or "",
            )
        )
    qrels: dict[str, dict[str, int]] = {}
    lines = (dataset_dir / "qrels.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:  # header: query-id corpus-id score
        parts = line.split("\t")
        if len(parts) >= 3 and int(parts[2]) > 0:
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries: dict[str, str] = {}
    for line in (dataset_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                queries[str(row["_id"])] = row["text"]
    if max_queries is not None:
        queries = dict(list(queries.items())[:max_queries])
    qrels = {q: qrels[q] for q in queries}
    return BeirDataset(
        name=dataset_dir.name,
        chunks=chunks,
        queries=queries,
        qrels=qrels,
        corpus_hash=hashlib.sha256(raw).hexdigest(),
    )


def split_like_ingestion(
    ds: BeirDataset, count_tokens: Callable[[str], int], *, target_tokens: int, overlap_tokens: int,
    table_max_tokens: int,
) -> BeirDataset:
    """``ds`` with each document split as the ingestion pipeline splits an uploaded text file that is headed by the
    document's title (``ingestion.chunking.chunk_elements`` with the ingestion settings given): a chunk's text starts
    with that title, its ``document_id`` is the corpus ``_id`` and its id ``<_id>#<n>``."""
    from ingestion.chunking import chunk_elements
    from ingestion.parsing.model import ElementBuilder
    from ingestion.parsing.textual import text_into

    chunks: list[ChunkRecord] = []
    for doc in ds.chunks:
        builder = ElementBuilder()
        if doc.title.strip():
            builder.title(doc.title, 1)
        text_into(doc.text, builder)
        if not builder.elements:
            continue
        drafts = chunk_elements(builder.elements, count_tokens=count_tokens, target_tokens=target_tokens,
                                overlap_tokens=overlap_tokens, table_max_tokens=table_max_tokens)
        chunks.extend(
            ChunkRecord(id=f"{doc.id}#{d.order}", tenant_id=doc.tenant_id, document_id=doc.id, document_version=1,
                        title=doc.title, text=d.text, section_path=tuple(d.section_path), order=d.order,
                        token_count=d.token_count)
            for d in drafts
        )
    return BeirDataset(ds.name, chunks, ds.queries, ds.qrels, ds.corpus_hash, dict(ds.extra),
                       chunking=f"ingestion-{target_tokens}-{overlap_tokens}-{table_max_tokens}")


def documents_ranked(document_ids: Sequence[str]) -> list[str]:
    """The documents of a ranked chunk list (each chunk's ``document_id``), each at the rank of its best chunk."""
    return list(dict.fromkeys(document_ids))


class DictChunkStore:
    """:class:`retrieval.protocols.ChunkStore` over an in-memory dict (evaluation and benchmarks)."""

    def __init__(self, chunks: Sequence[ChunkRecord] = ()) -> None:
        self._by_id = {c.id: c for c in chunks}

    def add(self, chunks: Sequence[ChunkRecord]) -> None:
        self._by_id.update((c.id, c) for c in chunks)

    def get_many(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        return {i: self._by_id[i] for i in chunk_ids if i in self._by_id}


def cache_key(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


def cached_array(
    cache_dir: Path | None, key: str, n_rows: int, compute: Callable[[], np.ndarray]
) -> np.ndarray:
    """``compute()`` once and keep the result at ``cache_dir/<key>.npy``; reuse it when the row count matches."""
    if cache_dir is None:
        return compute()
    path = cache_dir / f"{key}.npy"
    if path.exists():
        arr = np.load(path)
        if arr.shape[0] == n_rows:
            log.info("loaded cached embeddings %s", path)
            return arr
    arr = compute()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, arr)
    tmp.replace(path)
    return arr


def cached_json(cache_dir: Path | None, key: str, compute: Callable[[], object]) -> object:
    """Same as :func:`cached_array` for JSON-serialisable values (e.g. extracted entities)."""
    if cache_dir is None:
        return compute()
    path = cache_dir / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    value = compute()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value), encoding="utf-8")
    tmp.replace(path)
    return value

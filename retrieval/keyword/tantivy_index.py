"""BM25 keyword index on tantivy (embedded, on disk).

Fields: ``body`` (title, section path and text in one field: the "flat" BM25 that measured best on SciFact), plus
``title`` and ``section`` indexed again on their own with a modest boost. Filter fields are raw (untokenised) terms
and pushed down as tantivy query clauses that do not contribute to the score.

User text never reaches a query parser: it is run through the index's own analyzer (simple tokenizer, lowercase,
English stop words, English stemmer) and each token becomes a term query, so no input can raise a syntax error.

One tantivy index per tenant (``<directory>/tenants/<sha256 of the tenant id>/``), so BM25's term statistics
(document frequencies, document count, average field length) are each tenant's own: the scores a tenant sees do not
move when another tenant uploads or deletes, so they cannot reveal which words other tenants' documents contain.

Writes: ``upsert_document`` deletes every chunk with that ``document_id`` and adds the new ones in one commit, then
reloads the searcher; a reader holds a searcher snapshot, so it sees the old set or the new set, never a mix.
A writer is opened for each commit and released after it, so a process does not hold one writer heap per tenant.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import tantivy

from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval._timeutil import epoch_micros

log = logging.getLogger(__name__)

ANALYZER = "kbqa_en"
#: Marker term in the ``acl`` field of chunks without ACL groups (visible to every caller of the tenant).
PUBLIC_ACL = "\x00public"
MAX_QUERY_TERMS = 64


def english_analyzer(*, stemming: bool = True, stopwords: bool = True) -> tantivy.TextAnalyzer:
    """The analysis of every text field and query: simple tokenizer (alphanumeric runs), drop tokens of 40+ bytes,
    lowercase, Lucene's 33 English stop words, Snowball English stemmer (the last two can be turned off, for
    evaluation). The Weaviate backend indexes the default analysis's output too, so both backends rank on the same
    terms."""
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
    )
    if stopwords:
        builder = builder.filter(tantivy.Filter.stopword("english"))
    if stemming:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


def unique_terms(analyzer: tantivy.TextAnalyzer, text: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct analysed terms of a query, in order of first appearance, at most ``limit``."""
    seen: dict[str, None] = {}
    for token in analyzer.analyze(text):
        seen.setdefault(token, None)
        if len(seen) >= limit:
            break
    return list(seen)


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    for name in ("body", "title", "section"):
        sb.add_text_field(name, stored=False, tokenizer_name=ANALYZER, index_option="freq")
    sb.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("tenant", "document_id", "doc_type", "acl", "tags"):
        sb.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("created_us", stored=False, indexed=True, fast=True)
    return sb.build()


def tenant_folder(tenant_id: str) -> str:
    """The folder name of a tenant's index: a hash, so any tenant id is a safe path component."""
    return hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:32]


class _TenantIndex:
    """One tenant's tantivy index (its own BM25 statistics) and its write lock."""

    def __init__(self, path: Path, schema: tantivy.Schema, analyzer: tantivy.TextAnalyzer) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.index = tantivy.Index(schema, path=str(path), reuse=True)
        self.index.register_tokenizer(ANALYZER, analyzer)
        self.lock = threading.Lock()


class TantivyKeywordIndex:
    """:class:`retrieval.protocols.KeywordIndex` on tantivy indexes stored under ``directory``, one per tenant.

    ``title_boost`` / ``section_boost`` weight the extra title and section fields relative to ``body``.
    ``stemming`` / ``stopwords`` choose the analysis (an index must be read with the analysis it was written with).
    One process may write a tenant's index at a time (tantivy's directory lock, held for the duration of a commit);
    any number read. Readers in other processes see a commit within about a second (tantivy's on-commit reload), or
    at once after ``refresh()``; a tenant created by another process is found on its first search.
    """

    name = "bm25"

    def __init__(
        self,
        directory: Path | str,
        *,
        title_boost: float = 0.25,
        section_boost: float = 0.3,
        writer_heap_bytes: int = 64_000_000,
        stemming: bool = True,
        stopwords: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self._analysis = {"stemming": stemming, "stopwords": stopwords}
        self.title_boost = title_boost
        self.section_boost = section_boost
        self._heap = writer_heap_bytes
        self._schema = _schema()
        self._tenants: dict[str, _TenantIndex] = {}
        self._open_lock = threading.Lock()
        try:
            (self.directory / "tenants").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AppError(
                ErrorCode.INDEX_UNAVAILABLE,
                f"cannot open keyword index at {self.directory}: {exc}",
            ) from exc
        if self.has_legacy_shared_index:
            log.warning("keyword index at %s holds a shared (pre per-tenant) index that is no longer read; "
                        "it is rebuilt per tenant from the stored chunks at start-up", self.directory)
        self._analyzer = english_analyzer(**self._analysis)

    @property
    def has_legacy_shared_index(self) -> bool:
        """A shared index from before the per-tenant layout lies at the top of the directory."""
        return (self.directory / "meta.json").exists()

    def retire_legacy_shared_index(self) -> None:
        """Remove the shared index's files (after its documents were written per tenant); ``tenants/`` stays."""
        for entry in self.directory.iterdir():
            if entry.name == "tenants":
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def _tenant(self, folder: str, *, create: bool) -> _TenantIndex | None:
        """The open index in ``tenants/<folder>`` (opened on first use; ``None`` when absent and not ``create``)."""
        with self._open_lock:
            found = self._tenants.get(folder)
            if found is not None:
                return found
            path = self.directory / "tenants" / folder
            if not create and not (path / "meta.json").exists():
                return None
            try:
                found = self._tenants[folder] = _TenantIndex(path, self._schema, english_analyzer(**self._analysis))
            except (OSError, ValueError) as exc:
                raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"cannot open keyword index at {path}: {exc}") from exc
            return found

    def _all_tenants(self) -> list[_TenantIndex]:
        root = self.directory / "tenants"
        folders = sorted(p.name for p in root.iterdir() if (p / "meta.json").exists()) if root.is_dir() else []
        return [t for f in folders if (t := self._tenant(f, create=False)) is not None]

    # -- writes ---------------------------------------------------------------------------------------------------
    def _to_doc(self, chunk: ChunkRecord) -> tantivy.Document:
        doc = tantivy.Document()
        doc.add_text("chunk_id", chunk.id)
        doc.add_text("body", " \n".join(p for p in (chunk.title, chunk.section, chunk.text) if p))
        doc.add_text("title", chunk.title)
        doc.add_text("section", chunk.section)
        doc.add_text("tenant", chunk.tenant_id)
        doc.add_text("document_id", chunk.document_id)
        doc.add_text("doc_type", chunk.doc_type)
        for group in chunk.acl_groups or (PUBLIC_ACL,):
            doc.add_text("acl", group)
        for tag in chunk.tags:
            doc.add_text("tags", tag)
        if chunk.created_at is not None:
            doc.add_integer("created_us", epoch_micros(chunk.created_at))
        return doc

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        self._replace(document_id, chunks)

    def delete_document(self, document_id: str) -> None:
        self._replace(document_id, ())

    def upsert_many(self, documents: Sequence[tuple[str, Sequence[ChunkRecord]]]) -> None:
        """Bulk load: several documents in one commit per tenant (same semantics as repeated ``upsert_document``).

        A document id lives in one tenant; its old chunks are deleted from every tenant index that holds them."""
        adds: dict[str, list[ChunkRecord]] = {}
        for _, chunks in documents:
            for chunk in chunks:
                adds.setdefault(tenant_folder(chunk.tenant_id), []).append(chunk)
        doc_ids = [d for d, _ in documents]
        targets = {f: self._tenant(f, create=True) for f in adds}
        for t in self._all_tenants():
            if t.path.name not in targets and self._holds_any(t, doc_ids):
                targets[t.path.name] = t
        for folder, tenant in sorted(targets.items()):
            assert tenant is not None
            self._write(tenant, doc_ids, adds.get(folder, []))

    def _holds_any(self, tenant: _TenantIndex, doc_ids: Sequence[str]) -> bool:
        searcher = tenant.index.searcher()
        q = tantivy.Query.term_set_query(self._schema, "document_id", list(doc_ids))
        return bool(searcher.search(q, 1, count=False).hits)

    def _write(self, tenant: _TenantIndex, doc_ids: Sequence[str], chunks: Sequence[ChunkRecord]) -> None:
        with tenant.lock:
            try:
                writer = tenant.index.writer(self._heap, 1)
            except ValueError as exc:
                raise AppError(
                    ErrorCode.INDEX_UNAVAILABLE,
                    f"keyword index is locked by another writer: {exc}",
                ) from exc
            try:
                for document_id in doc_ids:
                    writer.delete_documents_by_term("document_id", document_id)
                for chunk in chunks:
                    writer.add_document(self._to_doc(chunk))
                try:
                    writer.commit()
                except ValueError as exc:
                    writer.rollback()
                    raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"keyword index commit failed: {exc}") from exc
            finally:
                writer.wait_merging_threads()  # releases the directory lock and the writer heap
            tenant.index.reload()

    def _replace(self, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        for chunk in chunks:
            if chunk.document_id != document_id:
                raise AppError(
                    ErrorCode.VALIDATION,
                    f"chunk {chunk.id} belongs to {chunk.document_id}, not {document_id}",
                )
        self.upsert_many([(document_id, chunks)])

    # -- reads ----------------------------------------------------------------------------------------------------
    def _terms(self, query: str) -> list[str]:
        return unique_terms(self._analyzer, query)

    def _text_query(self, terms: list[str]) -> tantivy.Query:
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        fields = (
            ("body", 1.0),
            ("title", self.title_boost),
            ("section", self.section_boost),
        )
        for term in terms:
            for field, boost in fields:
                if boost <= 0:
                    continue
                q = tantivy.Query.term_query(self._schema, field, term)
                clauses.append(
                    (
                        tantivy.Occur.Should,
                        q if boost == 1.0 else tantivy.Query.boost_query(q, boost),
                    )
                )
        return tantivy.Query.boolean_query(clauses)

    def _filter_clauses(self, flt: SearchFilter) -> list[tantivy.Query]:
        s = self._schema
        out = [tantivy.Query.term_query(s, "tenant", flt.tenant_id)]
        if flt.acl_groups is not None:
            out.append(tantivy.Query.term_set_query(s, "acl", [PUBLIC_ACL, *flt.acl_groups]))
        if flt.doc_types:
            out.append(tantivy.Query.term_set_query(s, "doc_type", list(flt.doc_types)))
        if flt.tags:
            out.append(tantivy.Query.term_set_query(s, "tags", list(flt.tags)))
        if flt.document_ids:
            out.append(tantivy.Query.term_set_query(s, "document_id", list(flt.document_ids)))
        if flt.created_from is not None or flt.created_to is not None:
            lo = epoch_micros(flt.created_from) if flt.created_from is not None else None
            hi = epoch_micros(flt.created_to) if flt.created_to is not None else None
            if lo is not None and hi is not None and lo > hi:
                return [tantivy.Query.empty_query()]
            out.append(tantivy.Query.range_query(s, "created_us", tantivy.FieldType.Integer, lo, hi))
        return out

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        terms = self._terms(query)
        if not terms or k <= 0:
            return []
        tenant = self._tenant(tenant_folder(flt.tenant_id), create=False)
        if tenant is None:
            return []
        clauses = [(tantivy.Occur.Must, self._text_query(terms))]
        clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)) for q in self._filter_clauses(flt)]
        searcher = tenant.index.searcher()
        result = searcher.search(tantivy.Query.boolean_query(clauses), k, count=False)
        return [Hit(searcher.doc(addr)["chunk_id"][0], float(score)) for score, addr in result.hits]

    def count(self, tenant_id: str | None = None) -> int:
        if tenant_id is None:
            return sum(int(t.index.searcher().num_docs) for t in self._all_tenants())
        tenant = self._tenant(tenant_folder(tenant_id), create=False)
        return 0 if tenant is None else int(tenant.index.searcher().num_docs)

    def refresh(self) -> None:
        """Pick up commits made by another process."""
        for t in self._all_tenants():
            t.index.reload()

    def close(self) -> None:
        with self._open_lock:
            self._tenants.clear()

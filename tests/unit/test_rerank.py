"""build_reranker: settings select the backend; missing or non-local model paths are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import AppError, ErrorCode
from core.settings import RetrievalSettings
from retrieval.rerank import build_reranker

pytestmark = pytest.mark.unit


def test_none_means_fused_order() -> None:
    assert build_reranker(RetrievalSettings()) is None


@pytest.mark.parametrize("kind", ["cross-encoder", "flag"])
def test_model_backends_need_a_path(kind: str) -> None:
    with pytest.raises(AppError) as err:
        build_reranker(RetrievalSettings(reranker=kind))
    assert err.value.code is ErrorCode.CONFIGURATION


@pytest.mark.parametrize("kind", ["cross-encoder", "flag"])
def test_hub_ids_are_refused_not_downloaded(kind: str, tmp_path: Path) -> None:
    with pytest.raises(AppError) as err:
        build_reranker(RetrievalSettings(reranker=kind, reranker_model_path="BAAI/bge-reranker-v2-m3"))
    assert err.value.code is ErrorCode.CONFIGURATION
    assert "local folder" in err.value.message

"""build_embedder's configuration and missing-extra errors (no model is loaded)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from core.errors import AppError, ErrorCode
from core.settings import EmbeddingSettings
from retrieval.embedders import build_embedder, model_version

pytestmark = pytest.mark.unit


def test_missing_model_folder_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(AppError) as err:
        build_embedder(EmbeddingSettings(model_path=str(tmp_path / "nope")))
    assert err.value.code is ErrorCode.CONFIGURATION
    assert "nope" in err.value.message


def test_missing_flagembedding_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)
    with pytest.raises(AppError) as err:
        build_embedder(EmbeddingSettings(backend="flag", model_path=str(tmp_path)))
    assert err.value.code is ErrorCode.MISSING_EXTRA
    assert err.value.details["package"] == "FlagEmbedding"


def test_missing_sentence_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(AppError) as err:
        build_embedder(EmbeddingSettings())
    assert err.value.code is ErrorCode.MISSING_EXTRA


def test_model_version_changes_with_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 4}')
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    first = model_version(tmp_path)
    assert first == model_version(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"x" * 11)
    assert model_version(tmp_path) != first

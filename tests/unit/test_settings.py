import pytest
from pydantic import ValidationError

from core.settings import PLACEHOLDER_SECRETS, Settings

pytestmark = pytest.mark.unit


def test_local_defaults_are_embedded(make_settings):
    s = make_settings()
    assert s.environment == "local"
    assert s.database_url.startswith("sqlite:///")
    assert s.ingestion.executor == "inline"
    assert s.index.backend == "embedded"
    assert s.generation.backend == "extractive"


def test_production_refuses_default_secret(make_settings):
    with pytest.raises(ValidationError, match="KBQA_SECRET_KEY"):
        make_settings(environment="production", database={"url": "postgresql+psycopg://x@db/kbqa"})


def test_production_refuses_short_secret(make_settings):
    with pytest.raises(ValidationError, match="at least 32"):
        make_settings(environment="production", secret_key="short", database={"url": "postgresql+psycopg://x@db/k"})


def test_production_refuses_embedded_sqlite(make_settings):
    with pytest.raises(ValidationError, match="DATABASE__URL"):
        make_settings(environment="production", secret_key="x" * 40)


def test_production_accepts_safe_values(make_settings):
    s = make_settings(environment="production", secret_key="x" * 40, database={"url": "postgresql+psycopg://x@db/k"})
    assert s.database_url == "postgresql+psycopg://x@db/k"
    assert s.secret_key not in PLACEHOLDER_SECRETS


def test_nested_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("KBQA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("KBQA_GENERATION__BACKEND", "vllm")
    monkeypatch.setenv("KBQA_GENERATION__VLLM_URL", "http://gpu:8000/v1")
    monkeypatch.setenv("KBQA_RETRIEVAL__TOP_K", "5")
    s = Settings(_env_file=None)
    assert s.generation.backend == "vllm"
    assert s.generation.vllm_url == "http://gpu:8000/v1"
    assert s.retrieval.top_k == 5
    assert s.data_dir == tmp_path


@pytest.mark.parametrize(
    "overrides",
    [
        {"ingestion": {"chunk_target_tokens": 100, "chunk_overlap_tokens": 100}},
        {"generation": {"context_window": 512, "max_new_tokens": 600}},
        {"generation": {"backend": "gpt-9000"}},
        {"retrieval": {"top_k": 0}},
        {"api": {"port": 70000}},
    ],
)
def test_invalid_values_are_refused(make_settings, overrides):
    with pytest.raises(ValidationError):
        make_settings(**overrides)

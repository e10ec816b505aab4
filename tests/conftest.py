"""Shared fixtures: offline model settings, temporary settings, a throw-away PostgreSQL database, eval data."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("KBQA_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("KBQA_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# `make test` starts PostgreSQL and Redis itself and sets this: a missing service is then a failure, not a skip.
REQUIRE_SERVICES = os.environ.get("KBQA_TEST_REQUIRE_SERVICES") == "1"


def service_missing(reason: str) -> None:
    """Skip a test whose server is not reachable, or fail it where the run promised to start that server."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (KBQA_TEST_REQUIRE_SERVICES=1: `make services` should have started it)")
    pytest.skip(reason)


def eval_dir() -> Path:
    return Path(os.environ.get("KBQA_EVAL_DIR", REPO.parent / "shared" / "eval"))


@pytest.fixture
def eval_data() -> Path:
    d = eval_dir()
    if not d.is_dir():
        pytest.skip(f"evaluation data not found at {d} (set KBQA_EVAL_DIR)")
    return d


@pytest.fixture
def make_settings(tmp_path: Path):  # noqa: ANN201
    from core.settings import Settings

    def make(**overrides):  # noqa: ANN001, ANN202
        base = {"data_dir": tmp_path / "data", "_env_file": None}
        base.update(overrides)
        return Settings(**base)

    return make


def _pg_reachable() -> bool:
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 2})
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
        return True
    except Exception:  # noqa: BLE001
        return False


@contextmanager
def fresh_pg_database() -> Iterator[str]:
    """Create an empty PostgreSQL database, yield its URL, drop it afterwards (skipped when PostgreSQL is away)."""
    from tests.servers import scratch_pg_database

    if not _pg_reachable():
        service_missing(f"PostgreSQL not reachable at {PG_ADMIN_URL.split('@')[-1]}")
    with scratch_pg_database(PG_ADMIN_URL) as url:
        yield url


@pytest.fixture(scope="session")
def pg_migrated_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One PostgreSQL database migrated to head for the whole session (the base of :func:`pg_db`); dropped at the
    end."""
    import sqlalchemy as sa

    from app.cli import migrate_database
    from core.settings import Settings

    if not _pg_reachable():
        service_missing(f"PostgreSQL not reachable at {PG_ADMIN_URL.split('@')[-1]}")
    name = f"kbqa_s_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        migrate_database(Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("pg"), database={"url": url}))
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_db(pg_migrated_url: str) -> Iterator[object]:
    """A :class:`core.db.session.Database` on the session's migrated PostgreSQL whose every session runs inside one
    outer transaction on one connection: a session's commit releases a SAVEPOINT, its rollback (a failed statement)
    returns to one, and the whole test is rolled back at the end. For tests that need PostgreSQL's SQL, not its
    concurrency: all sessions share one connection (use :func:`pg_url` for several connections, locks or workers)."""
    from sqlalchemy.orm import sessionmaker

    from core.db.session import Database

    db = Database(pg_migrated_url)
    connection = db.engine.connect()
    outer = connection.begin()
    db._factory = sessionmaker(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
    try:
        yield db
    finally:
        outer.rollback()
        connection.close()
        db.dispose()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture(scope="module")
def pg_module_url() -> Iterator[str]:
    """One PostgreSQL database for a whole test module (its tests clean up or truncate what they use)."""
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except Exception:  # noqa: BLE001
        service_missing(f"Redis not reachable at {REDIS_URL}")
    return REDIS_URL


@pytest.fixture(scope="session")
def weaviate_server() -> Iterator[object]:
    """A real Weaviate for the session: ``KBQA_TEST_WEAVIATE_URL`` (+ ``KBQA_TEST_WEAVIATE_GRPC_PORT``, default 50051)
    when set, else the binary ``scripts/build-go-servers.sh`` builds, started on free loopback ports with a temp data
    dir and stopped at session end. Neither: skipped, or failed under ``KBQA_TEST_REQUIRE_SERVICES=1``."""
    from tests.servers import WeaviateServer, run_weaviate, weaviate_binary

    url = os.environ.get("KBQA_TEST_WEAVIATE_URL", "")
    if url:
        yield WeaviateServer(url.rstrip("/"), int(os.environ.get("KBQA_TEST_WEAVIATE_GRPC_PORT", "50051")))
        return
    binary = weaviate_binary()
    if not binary.is_file():
        service_missing(
            f"no Weaviate server: {binary} not built (run `bash scripts/build-go-servers.sh`) "
            "and KBQA_TEST_WEAVIATE_URL not set"
        )
    with run_weaviate(binary) as server:
        yield server


@pytest.fixture(scope="session")
def minio_server() -> Iterator[object]:
    """A real S3 server (MinIO) for the session: ``KBQA_TEST_S3_URL`` with ``KBQA_TEST_S3_ACCESS_KEY`` and
    ``KBQA_TEST_S3_SECRET_KEY`` when set, else the binary ``scripts/build-go-servers.sh`` builds, started on a free
    loopback port with a temp data dir and stopped at session end. Neither: skipped, or failed under
    ``KBQA_TEST_REQUIRE_SERVICES=1``."""
    from tests.servers import MinioServer, minio_binary, run_minio

    url = os.environ.get("KBQA_TEST_S3_URL", "")
    if url:
        yield MinioServer(
            url.rstrip("/"),
            os.environ.get("KBQA_TEST_S3_ACCESS_KEY", ""),
            os.environ.get("KBQA_TEST_S3_SECRET_KEY", ""),
        )
        return
    binary = minio_binary()
    if not binary.is_file():
        service_missing(
            f"no MinIO server: {binary} not built (run `bash scripts/build-go-servers.sh`) and KBQA_TEST_S3_URL not set"
        )
    with run_minio(binary) as server:
        yield server


_PRELOADED_LLM: object | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Load the packaged GGUF once before any test imports the vector index's native library.

    llama.cpp cannot read a model's vocabulary once usearch's bundled C++ runtime is loaded (std::bad_cast); loaded
    first, later loads in the same process work. ``app.main.build_container`` orders its start-up the same way.
    """
    global _PRELOADED_LLM
    try:
        from llama_cpp import Llama

        from app.generation.backends.llamacpp import find_packaged_gguf
    except ImportError:
        return
    path = find_packaged_gguf()
    if path is not None:
        _PRELOADED_LLM = Llama(model_path=str(path), n_ctx=256, n_threads=1, verbose=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _PRELOADED_LLM
    if _PRELOADED_LLM is not None:
        _PRELOADED_LLM.close()  # type: ignore[attr-defined]
        _PRELOADED_LLM = None

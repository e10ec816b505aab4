"""SQLAlchemy 2 models. Portable across SQLite (embedded mode) and PostgreSQL (distributed mode)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def as_utc(value: dt.datetime) -> dt.datetime:
    """SQLite hands back naive datetimes for timezone-aware columns; they were written in UTC."""
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def new_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[str]: JSON, list[Any]: JSON}


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    """An API key. Only a sha256 hash of the secret is stored; ``prefix`` identifies it in listings."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    acl_groups: Mapped[list[str]] = mapped_column(default=list)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class User(Base):
    """A person who logs in with an e-mail address and a password. Only a salted scrypt hash of the password is
    stored (see ``core.passwords``). E-mail addresses are unique within a tenant; login finds the account by
    e-mail and password across tenants (``app.api.auth.login_with_password``), so creating a user reveals nothing
    about other tenants' users.
    ``failed_logins`` and ``locked_until`` slow down password guessing for one account."""

    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("tenant_id", "email", name="uq_users_tenant_email"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(254), index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str] = mapped_column(String(16))
    acl_groups: Mapped[list[str]] = mapped_column(default=list)
    password_hash: Mapped[str] = mapped_column(String(256))
    failed_logins: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_login_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    disabled_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    password_changed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: ``<issuer> <sub>`` of the single-sign-on identity linked to this account (first SSO login links it by verified
    #: e-mail; another identity with the same e-mail is refused afterwards). ``None``: never signed in through SSO.
    oidc_subject: Mapped[str | None] = mapped_column(String(512), index=True)


class LoginSession(Base):
    """A browser session. The cookie carries a random token; only its sha256 (``id``) is stored, so a copy of the
    database holds no usable session. The principal is a user or an API key (``principal_kind``). A session ends when
    it is revoked (logout, password change or reset, disable, key revocation, "sign out everywhere") or
    ``SESSION_TTL_S`` after it was created."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    principal_kind: Mapped[str] = mapped_column(String(8))
    principal_id: Mapped[str] = mapped_column(String(32), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class OidcLogin(Base):
    """A single-sign-on login in progress: made when the browser is sent to the provider, deleted when it comes back
    (used once). ``id`` is the sha256 of the ``state`` parameter; the PKCE verifier and the nonce never leave the
    server."""

    __tablename__ = "oidc_logins"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(128))
    code_verifier: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("tenant_id", "content_hash", name="uq_documents_tenant_hash"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    filename: Mapped[str] = mapped_column(String(512))
    title: Mapped[str] = mapped_column(String(512), default="")
    mime_type: Mapped[str] = mapped_column(String(128), default="")
    doc_type: Mapped[str] = mapped_column(String(32), default="")
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    content_hash: Mapped[str] = mapped_column(String(64))
    storage_path: Mapped[str] = mapped_column(String(1024), default="")
    version: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    page_count: Mapped[int | None] = mapped_column(Integer)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    acl_groups: Mapped[list[str]] = mapped_column(default=list)
    tags: Mapped[list[str]] = mapped_column(default=list)
    chunker_version: Mapped[str] = mapped_column(String(32), default="")
    embedder_version: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    chunks: Mapped[list[Chunk]] = relationship(back_populates="document", cascade="all, delete-orphan")
    jobs: Mapped[list[IngestionJob]] = relationship(back_populates="document", cascade="all, delete-orphan")


class Chunk(Base):
    __tablename__ = "chunks"
    __table_args__ = (Index("ix_chunks_document_ord", "document_id", "ord"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    document_version: Mapped[int] = mapped_column(Integer)
    order: Mapped[int] = mapped_column("ord", Integer)
    text: Mapped[str] = mapped_column(Text)
    section_path: Mapped[list[str]] = mapped_column(default=list)
    page_start: Mapped[int | None] = mapped_column(Integer)
    page_end: Mapped[int | None] = mapped_column(Integer)
    element_types: Mapped[list[str]] = mapped_column(default=list)
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    chunker_version: Mapped[str] = mapped_column(String(32), default="")
    embedder_version: Mapped[str] = mapped_column(String(128), default="")
    #: float16 embeddings of the chunk's sentences, one row of the embedder's dimension each (None: not computed);
    #: deferred, so loading chunks for an answer does not read them
    sentence_vectors: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)

    document: Mapped[Document] = relationship(back_populates="chunks")


class IngestionJob(Base):
    """One attempt-tracked ingestion of one document version. ``stages`` maps stage name to
    ``{status, progress, started_at, finished_at, duration_ms}``. ``lease_expires_at`` is set while a worker holds
    the job; a job whose lease expired is picked up again until ``attempts`` reaches the limit. ``dispatched`` is the
    outbox flag: False until the broker has accepted the task."""

    __tablename__ = "ingestion_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    document_version: Mapped[int] = mapped_column(Integer, default=1)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    stages: Mapped[dict[str, Any]] = mapped_column(default=dict)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    dispatched: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    trace_context: Mapped[dict[str, Any]] = mapped_column(default=dict)
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))

    document: Mapped[Document] = relationship(back_populates="jobs")


class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    # The principal who asked: an API key id or a user id (both are 32-hex ids, see ``Principal``).
    actor_id: Mapped[str | None] = mapped_column(String(32), index=True)
    title: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    messages: Mapped[list[Message]] = relationship(
        back_populates="conversation", cascade="all, delete-orphan", order_by="Message.created_at"
    )


class Message(Base):
    """One turn. An assistant message's ``meta`` holds how the answer ended: ``outcome`` (answered / partial /
    not_found), ``missing`` (``unlinked``: those of them the section names, but not where it answers), ``refused``,
    ``degraded``, ``timings_ms`` (first_token, total, ...), ``unit`` (the answering section) and ``sources`` (the
    passages it was given: chunk, document, title, section)."""

    __tablename__ = "messages"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    citations: Mapped[list[Any]] = mapped_column(default=list)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    conversation: Mapped[Conversation] = relationship(back_populates="messages")


class Feedback(Base):
    __tablename__ = "feedback"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), index=True)
    actor_id: Mapped[str | None] = mapped_column(String(32))
    rating: Mapped[str] = mapped_column(String(8))
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TokenUsage(Base):
    """Requests and tokens per principal (API key or user) per day."""

    __tablename__ = "token_usage"
    __table_args__ = (UniqueConstraint("actor_id", "day", name="uq_token_usage_actor_day"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    actor_kind: Mapped[str] = mapped_column(String(8), default="key")
    actor_id: Mapped[str] = mapped_column(String(32), index=True)
    day: Mapped[dt.date] = mapped_column()
    requests: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms_total: Mapped[float] = mapped_column(Float, default=0.0)


class AuditEvent(Base):
    """Who did what. ``actor_kind`` is ``key``, ``user`` or ``system``; ``actor_name`` is copied at the time of the
    event so the log stays readable after a key or user is gone."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    actor_kind: Mapped[str] = mapped_column(String(8), default="system")
    actor_id: Mapped[str | None] = mapped_column(String(32))
    actor_name: Mapped[str] = mapped_column(String(254), default="")
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(256), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class ReviewItem(Base):
    """An answer that needs a look: thumbs-down feedback, or an answer that ended ``not_found`` / ``partial``. One per
    assistant message (``reasons`` collects why). A reviewer marks the right section (``expected_*``), writes the
    facts the answer must contain, or marks the document as missing; a reviewed item belongs to the tenant's
    regression set."""

    __tablename__ = "review_items"
    __table_args__ = (Index("ix_review_items_tenant_status_created", "tenant_id", "status", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(64))
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), unique=True)
    question: Mapped[str] = mapped_column(Text, default="")
    answer: Mapped[str] = mapped_column(Text, default="")
    outcome: Mapped[str] = mapped_column(String(16), default="")
    sources: Mapped[list[Any]] = mapped_column(default=list)
    reasons: Mapped[list[str]] = mapped_column(default=list)
    comment: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="open")
    expected_chunk_id: Mapped[str | None] = mapped_column(String(32))
    expected_document_id: Mapped[str | None] = mapped_column(String(32))
    expected_title: Mapped[str] = mapped_column(String(512), default="")
    expected_section: Mapped[list[str]] = mapped_column(default=list)
    expected_facts: Mapped[list[str]] = mapped_column(default=list)
    document_missing: Mapped[bool] = mapped_column(Boolean, default=False)
    reviewer_id: Mapped[str | None] = mapped_column(String(32))
    reviewed_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class RegressionRun(Base):
    """One replay of a tenant's regression set through the answer pipeline. ``results``: one entry per item (passed,
    section_ok, facts_ok, missing facts, outcome, cited sections, change against the previous run)."""

    __tablename__ = "regression_runs"
    __table_args__ = (Index("ix_regression_runs_tenant_started", "tenant_id", "started_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(64))
    actor_name: Mapped[str] = mapped_column(String(254), default="")
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    total: Mapped[int] = mapped_column(Integer, default=0)
    passed: Mapped[int] = mapped_column(Integer, default=0)
    previous_run_id: Mapped[str | None] = mapped_column(String(32))
    results: Mapped[list[Any]] = mapped_column(default=list)


class AnswerStat(Base):
    """How one stored answer ended, in columns the usage analytics can aggregate without reading JSON: written with
    the assistant message (``app.services.analytics.record_answer``); the migration copies older answers' meta."""

    __tablename__ = "answer_stats"
    __table_args__ = (Index("ix_answer_stats_tenant_created", "tenant_id", "created_at"),)

    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str] = mapped_column(String(16), default="")
    first_token_ms: Mapped[float | None] = mapped_column(Float)
    total_ms: Mapped[float | None] = mapped_column(Float)


class AnswerCitation(Base):
    """A document an answer cited (once per answer and document)."""

    __tablename__ = "answer_citations"
    __table_args__ = (Index("ix_answer_citations_tenant_created_doc", "tenant_id", "created_at", "document_id"),)

    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


# -- knowledge graph (distributed mode) ------------------------------------------------------------------------------
# The PostgreSQL graph store (``retrieval.graph.sql``) keeps each tenant's graph in these three tables, written in the
# transaction that writes the document's chunk rows. Node ids carry the embedded store's kind prefixes (``e:``
# entity, ``c:`` chunk, ``d:`` document, ``s:`` section); every node except an entity and every edge belongs to one
# document, so deleting a document is two deletes by ``document_id`` plus the entities it left without mentions.
# Embedded mode creates the tables too and leaves them empty.


class GraphNode(Base):
    """A node of one tenant's graph. Entity nodes count the chunks mentioning them (``mentions``); chunk nodes carry
    the filter fields, so the neighbourhood query can apply a ``SearchFilter`` without the chunk table."""

    __tablename__ = "graph_nodes"
    __table_args__ = (Index("ix_graph_nodes_document", "document_id"),)

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    node_id: Mapped[str] = mapped_column(String(1024), primary_key=True)
    kind: Mapped[str] = mapped_column(String(1))
    document_id: Mapped[str | None] = mapped_column(String(64))
    mentions: Mapped[int] = mapped_column(Integer, default=0)
    acl_groups: Mapped[list[str] | None] = mapped_column(JSON)
    doc_type: Mapped[str | None] = mapped_column(String(128))
    tags: Mapped[list[str] | None] = mapped_column(JSON)
    created_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class GraphEdge(Base):
    """An edge contributed by one document: ``m`` chunk -> entity (mention), ``s`` structure (document > section >
    chunk), ``c`` entity - entity co-occurrence (``weight`` chunks of this document; a pair's total weight is the sum
    over documents)."""

    __tablename__ = "graph_edges"
    __table_args__ = (
        Index("ix_graph_edges_tenant_dst", "tenant_id", "dst", "kind"),
        Index("ix_graph_edges_tenant_src", "tenant_id", "src", "kind"),
    )

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    src: Mapped[str] = mapped_column(String(1024), primary_key=True)
    dst: Mapped[str] = mapped_column(String(1024), primary_key=True)
    kind: Mapped[str] = mapped_column(String(1))
    weight: Mapped[int] = mapped_column(Integer, default=1)


class GraphToken(Base):
    """Content word -> entity keys containing it (partial linking of queries to entity names)."""

    __tablename__ = "graph_tokens"

    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    token: Mapped[str] = mapped_column(String(256), primary_key=True)
    entity: Mapped[str] = mapped_column(String(1024), primary_key=True)

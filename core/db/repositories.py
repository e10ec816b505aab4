"""All SQL lives here. Keyword-only functions taking ``session=``; verbs: get / list / create / update / delete."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Text, and_, cast, delete, func, or_, select, update
from sqlalchemy.orm import Session

from core.db.models import (
    ApiKey,
    AuditEvent,
    Chunk,
    Conversation,
    Document,
    Feedback,
    IngestionJob,
    LoginSession,
    Message,
    Tenant,
    TokenUsage,
    User,
    as_utc,
    utcnow,
)
from core.errors import AppError, ErrorCode
from core.passwords import hash_password
from core.types import TERMINAL_STATUSES, Actor, ChunkRecord, Role, acl_allows

KEY_PREFIX = "kbqa_"


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


# --- tenants --------------------------------------------------------------------------------------------------------


def get_or_create_tenant(*, session: Session, tenant_id: str, name: str | None = None) -> Tenant:
    tenant = session.get(Tenant, tenant_id)
    if tenant is None:
        tenant = Tenant(id=tenant_id, name=name or tenant_id)
        session.add(tenant)
        session.flush()
    return tenant


# --- API keys -------------------------------------------------------------------------------------------------------


def create_api_key(
    *, session: Session, tenant_id: str, name: str, role: Role, acl_groups: Sequence[str] = ()
) -> tuple[ApiKey, str]:
    """Create a key; returns the row and the secret (shown once, never stored)."""
    get_or_create_tenant(session=session, tenant_id=tenant_id)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKey(
        tenant_id=tenant_id,
        name=name,
        role=role.value,
        prefix=secret[: len(KEY_PREFIX) + 6],
        key_hash=hash_key(secret),
        acl_groups=list(acl_groups),
    )
    session.add(row)
    session.flush()
    return row, secret


def get_api_key_by_secret(*, session: Session, secret: str) -> ApiKey | None:
    row = session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(secret)))
    if row is None or row.revoked_at is not None:
        return None
    return row


def touch_api_key(*, session: Session, key_id: str) -> None:
    session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=utcnow()))


def list_api_keys(*, session: Session, tenant_id: str) -> list[ApiKey]:
    return list(session.scalars(select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at)))


def revoke_api_key(*, session: Session, tenant_id: str, key_id: str) -> ApiKey:
    row = session.get(ApiKey, key_id)
    if row is None or row.tenant_id != tenant_id:
        raise AppError(ErrorCode.NOT_FOUND, "API key not found")
    row.revoked_at = row.revoked_at or utcnow()
    revoke_sessions(session=session, principal_id=row.id)
    return row


# --- users ----------------------------------------------------------------------------------------------------------


def normalise_email(email: str) -> str:
    return email.strip().lower()


def create_user(
    *,
    session: Session,
    tenant_id: str,
    email: str,
    name: str,
    role: Role,
    password: str,
    acl_groups: Sequence[str] = (),
) -> User:
    get_or_create_tenant(session=session, tenant_id=tenant_id)
    email = normalise_email(email)
    # Only this tenant's users count: the answer says nothing about other tenants (addresses are unique per tenant).
    if get_user_by_email(session=session, email=email, tenant_id=tenant_id) is not None:
        raise AppError(ErrorCode.CONFLICT, f"a user with e-mail {email} already exists in this tenant")
    row = User(
        tenant_id=tenant_id,
        email=email,
        name=name or email,
        role=role.value,
        acl_groups=list(acl_groups),
        password_hash=hash_password(password),
        failed_logins=0,
    )
    session.add(row)
    session.flush()
    return row


def set_user_password(user: User, password: str, *, session: Session, unlock: bool = False) -> None:
    """Store a new password and end every session of the user (the caller may open a fresh one). ``unlock`` also
    clears failed logins and a lockout (an administrator's reset)."""
    user.password_hash = hash_password(password)
    user.password_changed_at = utcnow()
    revoke_sessions(session=session, principal_id=user.id)
    if unlock:
        user.failed_logins, user.locked_until = 0, None


def get_user_by_email(*, session: Session, email: str, tenant_id: str) -> User | None:
    return session.scalar(select(User).where(User.tenant_id == tenant_id, User.email == normalise_email(email)))


def list_users_by_email(*, session: Session, email: str) -> list[User]:
    """The accounts with this address in every tenant (login picks the one whose password matches), oldest first."""
    return list(session.scalars(select(User).where(User.email == normalise_email(email)).order_by(User.created_at)))


def get_user(*, session: Session, tenant_id: str, user_id: str) -> User:
    row = session.get(User, user_id)
    if row is None or row.tenant_id != tenant_id:
        raise AppError(ErrorCode.NOT_FOUND, "user not found")
    return row


def list_users(*, session: Session, tenant_id: str) -> list[User]:
    return list(session.scalars(select(User).where(User.tenant_id == tenant_id).order_by(User.email)))


def count_active_admins(*, session: Session, tenant_id: str) -> int:
    stmt = select(func.count()).where(
        User.tenant_id == tenant_id, User.role == Role.ADMIN.value, User.disabled_at.is_(None)
    )
    return int(session.scalar(stmt) or 0)


# --- browser sessions -----------------------------------------------------------------------------------------------


def create_session(*, session: Session, tenant_id: str, principal_kind: str, principal_id: str, ttl_s: float) -> str:
    """A new browser session; returns its token (for the cookie). Only the token's sha256 is stored. Sessions older
    than ``ttl_s`` (expired, revoked or not) are deleted on the way, so the table stays small."""
    session.execute(delete(LoginSession).where(LoginSession.created_at < utcnow() - dt.timedelta(seconds=ttl_s)))
    token = secrets.token_urlsafe(32)
    session.add(
        LoginSession(id=hash_key(token), tenant_id=tenant_id, principal_kind=principal_kind, principal_id=principal_id)
    )
    session.flush()
    return token


def get_live_session(*, session: Session, token: str, ttl_s: float) -> LoginSession | None:
    """The session for this cookie token if it is neither revoked nor older than ``ttl_s``; records it as seen."""
    row = session.get(LoginSession, hash_key(token))
    now = utcnow()
    if row is None or row.revoked_at is not None or as_utc(row.created_at) + dt.timedelta(seconds=ttl_s) < now:
        return None
    if (now - as_utc(row.last_seen_at)).total_seconds() >= 60:  # at most one write a minute per session
        row.last_seen_at = now
    return row


def revoke_session(*, session: Session, token: str) -> None:
    session.execute(
        update(LoginSession)
        .where(LoginSession.id == hash_key(token), LoginSession.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


def revoke_sessions(*, session: Session, principal_id: str, keep_token: str | None = None) -> int:
    """End every live session of a user or key (all but ``keep_token``'s); returns how many were ended."""
    stmt = update(LoginSession).where(LoginSession.principal_id == principal_id, LoginSession.revoked_at.is_(None))
    if keep_token:
        stmt = stmt.where(LoginSession.id != hash_key(keep_token))
    result = session.execute(stmt.values(revoked_at=utcnow()))
    return int(getattr(result, "rowcount", 0) or 0)


# --- documents ------------------------------------------------------------------------------------------------------


def get_document(
    *, session: Session, tenant_id: str, document_id: str, acl_groups: Sequence[str] | None = None
) -> Document:
    """The document, if it is this tenant's and the caller's groups (``None``: unrestricted) may see it; otherwise
    the same 404 as for a document that does not exist."""
    doc = session.get(Document, document_id)
    if doc is None or doc.tenant_id != tenant_id or not acl_allows(doc.acl_groups, acl_groups):
        raise AppError(ErrorCode.NOT_FOUND, f"document {document_id} not found")
    return doc


def get_document_by_hash(*, session: Session, tenant_id: str, content_hash: str) -> Document | None:
    return session.scalar(
        select(Document).where(Document.tenant_id == tenant_id, Document.content_hash == content_hash)
    )


def get_document_by_filename(
    *, session: Session, tenant_id: str, filename: str, acl_groups: Sequence[str] | None = None
) -> Document | None:
    """The newest document with this file name that the caller's groups (``None``: unrestricted) may see."""
    rows = session.scalars(
        select(Document)
        .where(Document.tenant_id == tenant_id, Document.filename == filename)
        .order_by(Document.updated_at.desc())
    )
    return next((d for d in rows if acl_allows(d.acl_groups, acl_groups)), None)


def like_escape(value: str) -> str:
    """``value`` with LIKE's wildcards escaped (use with ``escape="\\"``): ``%`` and ``_`` match only themselves."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


#: Orders of the document list: newest / oldest by ``updated_at``, title A-Z / Z-A; each ends on ``id`` so ties page
#: exactly once by keyset.
DOCUMENT_SORTS = ("newest", "oldest", "title", "title_desc")


def _sort_columns(sort: str) -> tuple[Any, bool]:
    """The sort key column of ``sort`` and whether it runs descending."""
    if sort not in DOCUMENT_SORTS:
        raise AppError(ErrorCode.VALIDATION, f"sort must be one of {', '.join(DOCUMENT_SORTS)}")
    column = Document.updated_at if sort in ("newest", "oldest") else Document.title
    return column, sort in ("newest", "title_desc")


def document_sort_key(doc: Document, sort: str) -> Any:
    """The value of ``doc`` in the sort key of ``sort`` (what a keyset cursor holds, with the id)."""
    _sort_columns(sort)
    return doc.updated_at if sort in ("newest", "oldest") else doc.title


def _documents_filter(
    stmt: Any,
    *,
    tenant_id: str,
    status: str | None,
    q: str | None,
    doc_type: str | None = None,
    tag: str | None = None,
) -> Any:
    stmt = stmt.where(Document.tenant_id == tenant_id)
    if status:
        stmt = stmt.where(Document.status == status)
    if doc_type:
        stmt = stmt.where(Document.doc_type == doc_type)
    if tag and tag.isascii():
        # Tags live in a JSON list: narrow by the tag's text here, the exact test is ``_visible`` (an ASCII tag is
        # written as itself in JSON on SQLite and PostgreSQL alike; others are matched in Python only).
        stmt = stmt.where(cast(Document.tags, Text).like(f"%{like_escape(tag)}%", escape="\\"))
    if q:
        like = f"%{like_escape(q.lower())}%"
        stmt = stmt.where(
            or_(
                func.lower(Document.filename).like(like, escape="\\"),
                func.lower(Document.title).like(like, escape="\\"),
            )
        )
    return stmt


def _visible(tags: Sequence[str] | None, groups: Sequence[str] | None, *, tag: str | None,
             acl_groups: Sequence[str] | None) -> bool:
    return acl_allows(groups, acl_groups) and (not tag or tag in (tags or ()))


def list_documents(
    *,
    session: Session,
    tenant_id: str,
    status: str | None = None,
    q: str | None = None,
    doc_type: str | None = None,
    tag: str | None = None,
    sort: str = "newest",
    limit: int = 500,
    offset: int = 0,
    after: tuple[Any, str] | None = None,
    acl_groups: Sequence[str] | None = None,
) -> list[Document]:
    """A page of documents in the order ``sort`` (one of :data:`DOCUMENT_SORTS`; default newest first: ``updated_at``,
    then ``id``, descending). ``after`` (the last row's ``(sort key, id)``, see :func:`document_sort_key`) gives the
    next page by keyset, stable however deep; ``offset`` skips rows instead. ``q`` matches a substring of the file
    name or title (literally: no wildcards); ``doc_type`` the detected type (``pdf``, ``docx``, ...); ``tag`` one of
    the document's tags, exactly. ``acl_groups`` are the caller's groups (``None``: unrestricted): documents limited
    to other groups are left out, so neither they nor their titles can be found."""
    column, descending = _sort_columns(sort)
    stmt = _documents_filter(
        select(Document), tenant_id=tenant_id, status=status, q=q, doc_type=doc_type, tag=tag
    )
    if after is not None:
        key, doc_id = after
        if descending:
            stmt = stmt.where(or_(column < key, and_(column == key, Document.id < doc_id)))
        else:
            stmt = stmt.where(or_(column > key, and_(column == key, Document.id > doc_id)))
    if descending:
        stmt = stmt.order_by(column.desc(), Document.id.desc())
    else:
        stmt = stmt.order_by(column.asc(), Document.id.asc())
    if acl_groups is None and not tag:
        return list(session.scalars(stmt.offset(offset).limit(limit)))
    # Groups and tags live in JSON lists (portable across SQLite and PostgreSQL), so they are tested page by page and
    # ``offset`` counts visible documents.
    out: list[Document] = []
    skip, pos, page = offset, 0, max(limit, 200)
    while len(out) < limit:
        rows = list(session.scalars(stmt.offset(pos).limit(page)))
        for d in rows:
            if not _visible(d.tags, d.acl_groups, tag=tag, acl_groups=acl_groups):
                continue
            if skip:
                skip -= 1
            else:
                out.append(d)
        if len(rows) < page:
            break
        pos += page
    return out[:limit]


def count_documents(
    *,
    session: Session,
    tenant_id: str,
    status: str | None = None,
    q: str | None = None,
    doc_type: str | None = None,
    tag: str | None = None,
    acl_groups: Sequence[str] | None = None,
) -> int:
    """How many documents :func:`list_documents` would list over all pages."""
    counts = count_documents_per_status(
        session=session, tenant_id=tenant_id, status=status, q=q, doc_type=doc_type, tag=tag, acl_groups=acl_groups
    )
    return sum(counts.values())


def count_documents_per_status(
    *,
    session: Session,
    tenant_id: str,
    status: str | None = None,
    q: str | None = None,
    doc_type: str | None = None,
    tag: str | None = None,
    acl_groups: Sequence[str] | None = None,
) -> dict[str, int]:
    """How many documents :func:`list_documents` would list, per status (statuses with none are left out); the same
    tenant, filters and ACL groups, so nobody counts a document they could not see."""
    filters: dict[str, Any] = {"tenant_id": tenant_id, "status": status, "q": q, "doc_type": doc_type, "tag": tag}
    if acl_groups is None and not tag:
        stmt = _documents_filter(select(Document.status, func.count()).select_from(Document), **filters)
        return {str(s): int(n) for s, n in session.execute(stmt.group_by(Document.status))}
    counts: dict[str, int] = {}
    stmt = _documents_filter(select(Document.status, Document.tags, Document.acl_groups), **filters)
    for s, tags, groups in session.execute(stmt):
        if _visible(tags, groups, tag=tag, acl_groups=acl_groups):
            counts[s] = counts.get(s, 0) + 1
    return counts


def create_document(*, session: Session, **fields: Any) -> Document:
    get_or_create_tenant(session=session, tenant_id=fields["tenant_id"])
    doc = Document(**fields)
    session.add(doc)
    session.flush()
    return doc


def find_document(*, session: Session, document_id: str) -> Document | None:
    """The document with this id in any tenant (for workers, which act on ids they were handed), or None."""
    return session.get(Document, document_id)


def count_documents_sharing_storage(*, session: Session, storage_path: str, except_id: str) -> int:
    """How many documents other than ``except_id`` point at the stored file ``storage_path``."""
    stmt = select(func.count()).select_from(Document).where(Document.storage_path == storage_path)
    return int(session.scalar(stmt.where(Document.id != except_id)) or 0)


def delete_document(*, session: Session, document: Document) -> None:
    session.execute(delete(Chunk).where(Chunk.document_id == document.id))
    session.execute(delete(IngestionJob).where(IngestionJob.document_id == document.id))
    session.delete(document)


def count_documents_by_status(*, session: Session, tenant_id: str | None = None) -> dict[str, int]:
    stmt = select(Document.status, func.count()).group_by(Document.status)
    if tenant_id:
        stmt = stmt.where(Document.tenant_id == tenant_id)
    return {status: n for status, n in session.execute(stmt)}


# --- chunks ---------------------------------------------------------------------------------------------------------


def replace_chunks(
    *, session: Session, document: Document, chunks: Sequence[ChunkRecord], embedder_version: str,
    sentence_vectors: Sequence[bytes | None] | None = None,
) -> None:
    """Replace every chunk of ``document`` with ``chunks`` (ids are content hashes, so a retry is idempotent).
    ``sentence_vectors[i]``: the packed sentence embeddings of ``chunks[i]`` (``retrieval.sentences.pack``), if any."""
    packed = list(sentence_vectors) if sentence_vectors is not None else [None] * len(chunks)
    if len(packed) != len(chunks):
        raise ValueError(f"{len(packed)} sentence vector blobs for {len(chunks)} chunks")
    session.execute(delete(Chunk).where(Chunk.document_id == document.id))
    session.add_all(
        Chunk(
            id=c.id,
            tenant_id=c.tenant_id,
            document_id=c.document_id,
            document_version=c.document_version,
            order=c.order,
            text=c.text,
            section_path=list(c.section_path),
            page_start=c.page_start,
            page_end=c.page_end,
            element_types=list(c.element_types),
            token_count=c.token_count,
            chunker_version=c.chunker_version,
            embedder_version=embedder_version,
            sentence_vectors=blob,
        )
        for c, blob in zip(chunks, packed, strict=True)
    )
    document.chunk_count = len(chunks)


def chunk_record(row: Chunk, doc: Document) -> ChunkRecord:
    return ChunkRecord(
        id=row.id,
        tenant_id=row.tenant_id,
        document_id=row.document_id,
        document_version=row.document_version,
        title=doc.title or doc.filename,
        text=row.text,
        section_path=tuple(row.section_path or ()),
        page_start=row.page_start,
        page_end=row.page_end,
        order=row.order,
        element_types=tuple(row.element_types or ()),
        token_count=row.token_count,
        chunker_version=row.chunker_version,
        acl_groups=tuple(doc.acl_groups or ()),
        doc_type=doc.doc_type,
        tags=tuple(doc.tags or ()),
        created_at=doc.created_at,
    )


def get_chunks(*, session: Session, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
    if not chunk_ids:
        return {}
    rows = session.execute(
        select(Chunk, Document).join(Document, Chunk.document_id == Document.id).where(Chunk.id.in_(list(chunk_ids)))
    )
    return {c.id: chunk_record(c, d) for c, d in rows}


def get_sentence_vectors(*, session: Session, chunk_ids: Sequence[str]) -> dict[str, bytes]:
    """Chunk id -> its packed sentence embeddings, for the chunks of ``chunk_ids`` that have them."""
    if not chunk_ids:
        return {}
    rows = session.execute(
        select(Chunk.id, Chunk.sentence_vectors).where(
            Chunk.id.in_(list(chunk_ids)), Chunk.sentence_vectors.is_not(None)
        )
    )
    return {i: bytes(blob) for i, blob in rows if blob}


def chunk_ids_by_document(*, session: Session) -> list[tuple[str, str]]:
    """(document id, chunk id) of every stored chunk, grouped by document (to rebuild an index from the database)."""
    rows = session.execute(select(Chunk.document_id, Chunk.id).order_by(Chunk.document_id, Chunk.order))
    return [(d, c) for d, c in rows]


def list_chunks(*, session: Session, document_id: str) -> list[Chunk]:
    return list(session.scalars(select(Chunk).where(Chunk.document_id == document_id).order_by(Chunk.order)))


# --- ingestion jobs -------------------------------------------------------------------------------------------------


def job_tenant(*, session: Session, job_id: str) -> str:
    """The tenant a job belongs to (its ingestion lane); ``""`` for an unknown job."""
    return session.scalar(select(IngestionJob.tenant_id).where(IngestionJob.id == job_id)) or ""


def latest_job(*, session: Session, document_id: str) -> IngestionJob | None:
    return session.scalar(
        select(IngestionJob).where(IngestionJob.document_id == document_id).order_by(IngestionJob.created_at.desc())
    )


def list_stale_jobs(*, session: Session, limit: int = 100) -> list[IngestionJob]:
    """Jobs not terminal whose lease expired, or that were never dispatched (the outbox)."""
    now = utcnow()
    stmt = (
        select(IngestionJob)
        .where(IngestionJob.status.notin_(TERMINAL_STATUSES))
        .where(
            or_(
                IngestionJob.dispatched.is_(False),
                IngestionJob.lease_expires_at < now,
            )
        )
        .order_by(IngestionJob.created_at)
        .limit(limit)
    )
    return list(session.scalars(stmt))


def count_jobs_by_status(*, session: Session) -> dict[str, int]:
    return {s: n for s, n in session.execute(select(IngestionJob.status, func.count()).group_by(IngestionJob.status))}


# --- conversations --------------------------------------------------------------------------------------------------


def get_conversation(
    *, session: Session, tenant_id: str, conversation_id: str, actor_id: str | None = None
) -> Conversation:
    """The conversation, if it is this tenant's (and, with ``actor_id``, that key's or user's own)."""
    conv = session.get(Conversation, conversation_id)
    if conv is None or conv.tenant_id != tenant_id or (actor_id is not None and conv.actor_id != actor_id):
        raise AppError(ErrorCode.NOT_FOUND, "conversation not found")
    return conv


def create_conversation(*, session: Session, tenant_id: str, actor_id: str | None, title: str) -> Conversation:
    conv = Conversation(tenant_id=tenant_id, actor_id=actor_id, title=title[:300])
    session.add(conv)
    session.flush()
    return conv


def list_conversations(
    *, session: Session, tenant_id: str, actor_id: str | None, limit: int = 50
) -> list[Conversation]:
    stmt = select(Conversation).where(Conversation.tenant_id == tenant_id)
    if actor_id:
        stmt = stmt.where(Conversation.actor_id == actor_id)
    return list(session.scalars(stmt.order_by(Conversation.updated_at.desc()).limit(limit)))


def add_message(
    *,
    session: Session,
    conversation_id: str,
    role: str,
    content: str,
    message_id: str | None = None,
    citations: list[Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> Message:
    kwargs: dict[str, Any] = {}
    if message_id:
        kwargs["id"] = message_id
    msg = Message(
        conversation_id=conversation_id,
        role=role,
        content=content,
        citations=citations or [],
        meta=meta or {},
        **kwargs,
    )
    session.add(msg)
    session.execute(update(Conversation).where(Conversation.id == conversation_id).values(updated_at=utcnow()))
    session.flush()
    return msg


def get_message(*, session: Session, tenant_id: str, message_id: str) -> Message:
    msg = session.get(Message, message_id)
    if msg is None or msg.conversation.tenant_id != tenant_id:
        raise AppError(ErrorCode.NOT_FOUND, "message not found")
    return msg


# --- feedback, usage, audit -----------------------------------------------------------------------------------------


def create_feedback(
    *, session: Session, tenant_id: str, message_id: str, actor_id: str | None, rating: str, comment: str
) -> Feedback:
    """Feedback on an answer in one of the caller's own conversations (anyone else's message is not found)."""
    msg = get_message(session=session, tenant_id=tenant_id, message_id=message_id)
    if msg.conversation.actor_id != actor_id or msg.role != "assistant":
        raise AppError(ErrorCode.NOT_FOUND, "message not found")
    fb = Feedback(tenant_id=tenant_id, message_id=message_id, actor_id=actor_id, rating=rating, comment=comment)
    session.add(fb)
    session.flush()
    return fb


def record_usage(
    *,
    session: Session,
    tenant_id: str,
    actor: Actor,
    prompt_tokens: int,
    completion_tokens: int,
    latency_ms: float = 0.0,
) -> None:
    if actor.id is None:
        return
    day = utcnow().date()
    row = session.scalar(select(TokenUsage).where(TokenUsage.actor_id == actor.id, TokenUsage.day == day))
    if row is None:
        row = TokenUsage(
            tenant_id=tenant_id,
            actor_kind=actor.kind,
            actor_id=actor.id,
            day=day,
            requests=0,
            prompt_tokens=0,
            completion_tokens=0,
            latency_ms_total=0.0,
        )
        session.add(row)
    row.requests += 1
    row.prompt_tokens += prompt_tokens
    row.completion_tokens += completion_tokens
    row.latency_ms_total += latency_ms


def list_usage(*, session: Session, tenant_id: str, days: int = 90) -> list[tuple[TokenUsage, str]]:
    """Usage rows of the last ``days`` days, newest first, each with the current name of its key or user."""
    since = utcnow().date() - dt.timedelta(days=days)
    name = func.coalesce(ApiKey.name, User.name, User.email, TokenUsage.actor_id)
    stmt = (
        select(TokenUsage, name)
        .outerjoin(ApiKey, (TokenUsage.actor_kind == "key") & (ApiKey.id == TokenUsage.actor_id))
        .outerjoin(User, (TokenUsage.actor_kind == "user") & (User.id == TokenUsage.actor_id))
        .where(TokenUsage.tenant_id == tenant_id, TokenUsage.day >= since)
        .order_by(TokenUsage.day.desc(), TokenUsage.requests.desc())
    )
    return [(u, n) for u, n in session.execute(stmt)]


def audit(
    *,
    session: Session,
    tenant_id: str,
    actor: Actor,
    action: str,
    target: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    session.add(
        AuditEvent(
            tenant_id=tenant_id,
            actor_kind=actor.kind,
            actor_id=actor.id,
            actor_name=actor.name[:254],
            action=action,
            target=target[:256],
            detail=detail or {},
        )
    )


def list_audit(
    *,
    session: Session,
    tenant_id: str,
    action: str | None = None,
    actor_id: str | None = None,
    before: int | None = None,
    limit: int = 50,
) -> list[AuditEvent]:
    """Newest first. ``action`` matches a prefix (``document.`` or ``document.upload``); ``before`` pages by id."""
    stmt = select(AuditEvent).where(AuditEvent.tenant_id == tenant_id)
    if action:
        stmt = stmt.where(AuditEvent.action.like(like_escape(action) + "%", escape="\\"))
    if actor_id:
        stmt = stmt.where(AuditEvent.actor_id == actor_id)
    if before is not None:
        stmt = stmt.where(AuditEvent.id < before)
    return list(session.scalars(stmt.order_by(AuditEvent.id.desc()).limit(limit)))

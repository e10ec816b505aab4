"""Every route × role × tenant × ACL: the status class each caller gets, from the table below.

Callers: anonymous; an agent, an editor and an admin of tenant ``acme``; the admin of tenant ``globex`` (the other
tenant). Objects named in paths (document, passage, conversation, message, key, user) belong to ``acme`` and are made
fresh for every request, so deleting routes do not disturb later rows. A second table checks ACL groups on the
document routes: a document restricted to group ``hr`` is invisible (404) to callers outside it, whatever their role
below admin. A route of the app without a row here fails the test: add its row when you add a route.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.main import create_app
from app.services import review, sso
from core.db import repositories as repo
from core.db.chunk_store import DbChunkStore
from core.db.models import Chunk, IngestionJob, RegressionRun
from core.types import Role
from ingestion.service import IngestService
from tests.fakes import FakeIndexRemover, FakeOidcIssuer
from tests.routes import operations
from tests.unit.test_api_auth_sse import fake_container
from tests.unit.test_ingest_service import FakeDispatcher

pytestmark = pytest.mark.unit

CALLERS = ("anonymous", "agent", "editor", "admin", "other_admin")

# (method, path): expected status class per caller, in the order of CALLERS. "2xx"/"3xx" are classes; a number is
# the exact status.
MATRIX: dict[tuple[str, str], tuple[str, str, str, str, str]] = {
    ("GET", "/healthz"): ("2xx", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/readyz"): ("2xx", "2xx", "2xx", "2xx", "2xx"),
    # Totals over all tenants only; open while no metrics token is set (see test_api_metrics).
    ("GET", "/metrics"): ("2xx", "2xx", "2xx", "2xx", "2xx"),
    # Each caller logs in with its own key; anonymous sends a wrong one.
    ("POST", "/api/v1/auth/session"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("DELETE", "/api/v1/auth/session"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/auth/me"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("DELETE", "/api/v1/auth/sessions"): ("401", "2xx", "2xx", "2xx", "2xx"),
    # API keys have no password.
    ("POST", "/api/v1/auth/password"): ("401", "403", "403", "403", "403"),
    ("GET", "/api/v1/auth/methods"): ("2xx", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/auth/oidc/login"): ("3xx", "3xx", "3xx", "3xx", "3xx"),
    # No state cookie from a started login: refused for everyone.
    ("GET", "/api/v1/auth/oidc/callback"): ("401", "401", "401", "401", "401"),
    ("POST", "/api/v1/ask"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/search"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/chunks/{chunk_id}"): ("401", "2xx", "2xx", "2xx", "404"),
    ("GET", "/api/v1/chunks/{chunk_id}/section"): ("401", "2xx", "2xx", "2xx", "404"),
    ("GET", "/api/v1/documents/{document_id}/original"): ("401", "2xx", "2xx", "2xx", "404"),
    ("POST", "/api/v1/documents"): ("401", "403", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/documents"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/documents/{document_id}"): ("401", "2xx", "2xx", "2xx", "404"),
    ("DELETE", "/api/v1/documents/{document_id}"): ("401", "403", "2xx", "2xx", "404"),
    ("POST", "/api/v1/documents/{document_id}/reindex"): ("401", "403", "2xx", "2xx", "404"),
    # Per-id results in a 200; another tenant's id reads not_found inside it (test_api_documents_bulk).
    ("POST", "/api/v1/documents/bulk-delete"): ("401", "403", "2xx", "2xx", "2xx"),
    ("POST", "/api/v1/documents/bulk-reindex"): ("401", "403", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/conversations"): ("401", "2xx", "2xx", "2xx", "2xx"),
    # The conversation (and its message) belong to the agent: nobody else sees it or rates its answers.
    ("GET", "/api/v1/conversations/{conversation_id}"): ("401", "2xx", "404", "404", "404"),
    ("POST", "/api/v1/feedback"): ("401", "2xx", "404", "404", "404"),
    ("GET", "/api/v1/keys"): ("401", "403", "403", "2xx", "2xx"),
    ("POST", "/api/v1/keys"): ("401", "403", "403", "2xx", "2xx"),
    ("DELETE", "/api/v1/keys/{key_id}"): ("401", "403", "403", "2xx", "404"),
    ("GET", "/api/v1/usage"): ("401", "403", "403", "2xx", "2xx"),
    ("GET", "/api/v1/users"): ("401", "403", "403", "2xx", "2xx"),
    ("POST", "/api/v1/users"): ("401", "403", "403", "2xx", "2xx"),
    ("PATCH", "/api/v1/users/{user_id}"): ("401", "403", "403", "2xx", "404"),
    ("DELETE", "/api/v1/users/{user_id}/sessions"): ("401", "403", "403", "2xx", "404"),
    ("GET", "/api/v1/audit"): ("401", "403", "403", "2xx", "2xx"),
    ("POST", "/v1/chat/completions"): ("401", "2xx", "2xx", "2xx", "2xx"),
    ("GET", "/v1/models"): ("401", "2xx", "2xx", "2xx", "2xx"),
    # The review queue and its reports: editors and admins of the tenant; starting a regression run: admins only.
    ("GET", "/api/v1/review/items"): ("401", "403", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/review/items/{item_id}"): ("401", "403", "2xx", "2xx", "404"),
    ("GET", "/api/v1/review/items/{item_id}/search"): ("401", "403", "2xx", "2xx", "404"),
    ("PUT", "/api/v1/review/items/{item_id}"): ("401", "403", "2xx", "2xx", "404"),
    ("GET", "/api/v1/review/regression"): ("401", "403", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/review/runs"): ("401", "403", "2xx", "2xx", "2xx"),
    ("POST", "/api/v1/review/runs"): ("401", "403", "403", "2xx", "2xx"),
    ("GET", "/api/v1/review/runs/{run_id}"): ("401", "403", "2xx", "2xx", "404"),
    ("GET", "/api/v1/review/gaps"): ("401", "403", "2xx", "2xx", "2xx"),
    ("GET", "/api/v1/analytics"): ("401", "403", "403", "2xx", "2xx"),
}

# ACL groups on the document routes: the document is restricted to group "hr".
ACL_CALLERS = ("agent", "agent_hr", "editor", "editor_hr", "admin")
ACL_MATRIX: dict[tuple[str, str], tuple[str, str, str, str, str]] = {
    ("GET", "/api/v1/documents/{document_id}"): ("404", "2xx", "404", "2xx", "2xx"),
    ("DELETE", "/api/v1/documents/{document_id}"): ("403", "403", "404", "2xx", "2xx"),
    ("POST", "/api/v1/documents/{document_id}/reindex"): ("403", "403", "404", "2xx", "2xx"),
    ("GET", "/api/v1/chunks/{chunk_id}"): ("404", "2xx", "404", "2xx", "2xx"),
    ("GET", "/api/v1/chunks/{chunk_id}/section"): ("404", "2xx", "404", "2xx", "2xx"),
    ("GET", "/api/v1/documents/{document_id}/original"): ("404", "2xx", "404", "2xx", "2xx"),
}

PASSWORD = "a long enough password"


class World:
    def __init__(self, client: TestClient, container: Any, keys: dict[str, str], ids: dict[str, str]) -> None:
        self.client, self.container, self.keys, self.ids = client, container, keys, ids
        self.counter = itertools.count()

    def fresh(self, groups: list[str] | None = None) -> dict[str, str]:
        """New acme objects for one request: a document (with one passage), the agent's conversation and message,
        a key and a user."""
        n = next(self.counter)
        submitted = self.container.ingest.submit(
            tenant_id="acme", filename=f"doc-{n}.md", data=f"# Doc {n}\n\ntext {n}".encode(), acl_groups=groups
        )
        doc = submitted.document
        with self.container.db.session() as s:
            # Indexed, so it can be indexed again (a document still being indexed answers 409 to reindex).
            s.execute(update(IngestionJob).where(IngestionJob.document_id == doc.id).values(status="indexed"))
            chunk_id = f"chunk{n:027d}"
            s.add(
                Chunk(
                    id=chunk_id,
                    tenant_id="acme",
                    document_id=doc.id,
                    document_version=doc.version,
                    order=0,
                    text=f"text {n}",
                    section_path=[],
                    element_types=[],
                    token_count=2,
                )
            )
            conv = repo.create_conversation(session=s, tenant_id="acme", actor_id=self.ids["agent"], title="t")
            msg = repo.add_message(session=s, conversation_id=conv.id, role="assistant", content="an answer")
            item = review.record_feedback(session=s, tenant_id="acme", message_id=msg.id, rating="down", comment="")
            run = RegressionRun(tenant_id="acme", actor_name="admin", total=0, passed=0, results=[])
            s.add(run)
            s.flush()
            key, _ = repo.create_api_key(session=s, tenant_id="acme", name=f"k{n}", role=Role.AGENT)
            user = repo.create_user(
                session=s, tenant_id="acme", email=f"u{n}@acme.example", name="u", role=Role.AGENT, password=PASSWORD
            )
            return {
                "document_id": doc.id,
                "chunk_id": chunk_id,
                "conversation_id": conv.id,
                "message_id": msg.id,
                "item_id": item.id if item is not None else "",
                "run_id": run.id,
                "key_id": key.id,
                "user_id": user.id,
            }

    def call(self, method: str, path: str, caller: str, groups: list[str] | None = None) -> int:
        objs = self.fresh(groups)
        url = path.format(**objs)
        headers = {} if caller == "anonymous" else {"Authorization": f"Bearer {self.keys[caller]}"}
        n = next(self.counter)
        kw: dict[str, Any] = {}
        if (method, path) == ("POST", "/api/v1/auth/session"):
            headers = {}
            kw["json"] = {"api_key": self.keys.get(caller, "kbqa_not-a-key")}
        elif (method, path) == ("POST", "/api/v1/auth/password"):
            kw["json"] = {"current_password": PASSWORD, "new_password": PASSWORD + "!"}
        elif path in ("/api/v1/ask",):
            kw["json"] = {"question": "what is in the doc?"}
        elif path == "/api/v1/search":
            kw["params"] = {"q": "text"}
        elif (method, path) == ("POST", "/api/v1/documents"):
            kw["files"] = {"files": (f"upload-{n}.md", f"# Upload {n}\n\nbody".encode(), "text/markdown")}
        elif path.startswith("/api/v1/documents/bulk-"):
            kw["json"] = {"ids": [objs["document_id"]]}
        elif path == "/api/v1/feedback":
            kw["json"] = {"message_id": objs["message_id"], "rating": "up"}
        elif (method, path) == ("POST", "/api/v1/keys"):
            kw["json"] = {"name": f"new-{n}"}
        elif (method, path) == ("POST", "/api/v1/users"):
            kw["json"] = {"email": f"new{n}@example.com", "password": PASSWORD}
        elif (method, path) == ("PATCH", "/api/v1/users/{user_id}"):
            kw["json"] = {"name": "renamed"}
        elif (method, path) == ("PUT", "/api/v1/review/items/{item_id}"):
            kw["json"] = {"facts": ["24 months"], "document_missing": False}
        elif path == "/v1/chat/completions":
            kw["json"] = {"messages": [{"role": "user", "content": "what is in the doc?"}]}
        self.client.cookies.clear()  # a login row leaves a session cookie: every call is only its own caller
        r = self.client.request(method, url, headers=headers, follow_redirects=False, **kw)
        if r.status_code >= 400:
            assert "error" in r.json() and r.json()["error"]["code"], (method, path, caller, r.text)
        return r.status_code


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from core.settings import Settings

    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path_factory.mktemp("matrix") / "data",
        api={"requests_per_minute": 0, "tokens_per_minute": 0, "login_attempts_per_minute": 0},
        oidc={
            "issuer": "https://idp.example",
            "client_id": "kbqa",
            "client_secret": "s",
            "redirect_url": "https://kb.example/api/v1/auth/oidc/callback",
            "tenant": "acme",
        },
    )
    container = fake_container(settings)
    container.chunk_store = DbChunkStore(container.db)
    container.ingest = IngestService(
        settings=settings, db=container.db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover()
    )
    keys, ids = {}, {}
    with container.db.session() as s:
        for name, tenant, role, groups in [
            ("agent", "acme", Role.AGENT, []),
            ("agent_hr", "acme", Role.AGENT, ["hr"]),
            ("editor", "acme", Role.EDITOR, []),
            ("editor_hr", "acme", Role.EDITOR, ["hr"]),
            ("admin", "acme", Role.ADMIN, []),
            ("other_admin", "globex", Role.ADMIN, []),
        ]:
            row, keys[name] = repo.create_api_key(session=s, tenant_id=tenant, name=name, role=role, acl_groups=groups)
            ids[name] = row.id
    app = create_app(settings, container=container, sweeper=False)
    app.state.oidc_provider = sso.OidcProvider(settings.oidc, transport=FakeOidcIssuer().transport)
    with TestClient(app) as client:
        yield World(client, container, keys, ids)
    container.db.dispose()


def _matches(status: int, expected: str) -> bool:
    return status // 100 == int(expected[0]) if expected.endswith("xx") else status == int(expected)


def test_every_route_has_a_row(world):
    routes = operations(world.client.app)
    assert len(routes) > 20
    missing = sorted(routes - MATRIX.keys())
    assert not missing, f"routes without a row in MATRIX (add the expected status per caller): {missing}"
    stale = sorted(MATRIX.keys() - routes)
    assert not stale, f"rows for routes that no longer exist: {stale}"
    openapi = {(m.upper(), p) for p, ops in world.client.app.openapi()["paths"].items() for m in ops}
    assert openapi <= routes  # the schema documents nothing the walk missed


@pytest.mark.parametrize(("method", "path"), sorted(MATRIX))
def test_route_role_tenant_matrix(world, method, path):
    got = {caller: world.call(method, path, caller) for caller in CALLERS}
    expected = dict(zip(CALLERS, MATRIX[(method, path)], strict=True))
    wrong = {c: (got[c], expected[c]) for c in CALLERS if not _matches(got[c], expected[c])}
    assert not wrong, f"{method} {path}: caller -> (got, expected): {wrong}"


@pytest.mark.parametrize(("method", "path"), sorted(ACL_MATRIX))
def test_route_acl_matrix(world, method, path):
    got = {caller: world.call(method, path, caller, groups=["hr"]) for caller in ACL_CALLERS}
    expected = dict(zip(ACL_CALLERS, ACL_MATRIX[(method, path)], strict=True))
    wrong = {c: (got[c], expected[c]) for c in ACL_CALLERS if not _matches(got[c], expected[c])}
    assert not wrong, f"{method} {path} on an 'hr' document: caller -> (got, expected): {wrong}"

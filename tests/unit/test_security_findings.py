"""Regression tests for the findings of the security probe (issue: forgeable sessions, ACL groups on document metadata
and management, unbounded bodies, proxy headers, account enumeration and the Low list). Each test failed on the code
before the fix. The app runs on a real, migrated SQLite database with the shared fakes of ``test_api_auth_sse`` and
``test_ingest_service``; the proxy-header tests run a real uvicorn server on a loopback port."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import threading
import time

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from pydantic import ValidationError

import app.api.auth as auth_module
from app.api.auth import LOCK_AFTER_FAILURES, SESSION_COOKIE
from app.main import create_app
from core.db import repositories as repo
from core.types import Role
from ingestion.service import IngestService
from tests.fakes import FakeDispatcher, FakeIndexRemover
from tests.servers import free_port
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

PASSWORD = "correct horse battery"
OLD_PLACEHOLDER = "change-me-local-only"


class Env:
    """The app, its container and bearer headers for keys of tenant ``acme`` (and one of ``globex``)."""

    def __init__(self, client: TestClient, container, keys: dict[str, str]) -> None:  # noqa: ANN001
        self.client, self.container, self.keys = client, container, keys
        self.app = client.app

    def h(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[name]}"}

    def new_user(self, email: str = "ana@acme.example", *, admin: str = "admin", **extra) -> dict:  # noqa: ANN003
        body = {"email": email, "name": email.split("@")[0], "role": "agent", "password": PASSWORD, **extra}
        r = self.client.post("/api/v1/users", json=body, headers=self.h(admin))
        assert r.status_code == 201, r.text
        return r.json()

    def login(
        self, email: str = "ana@acme.example", password: str = PASSWORD, **extra: str
    ) -> tuple[TestClient, httpx.Response]:
        browser = TestClient(self.app)
        return browser, browser.post("/api/v1/auth/session", json={"email": email, "password": password, **extra})

    def add_document(self, filename: str, groups: list[str] | None = None, data: bytes | None = None) -> str:
        submitted = self.container.ingest.submit(
            tenant_id="acme", filename=filename, data=data or f"# {filename}\n\ntext".encode(), acl_groups=groups
        )
        return submitted.document.id


@pytest.fixture
def make_env(make_settings):
    made = []

    def make(ingestion: dict | None = None, database: dict | None = None, **api) -> Env:  # noqa: ANN003
        settings = make_settings(
            api={"requests_per_minute": 0, "tokens_per_minute": 0, **api},
            ingestion=ingestion or {},
            database=database or {},
        )
        container = fake_container(settings)
        container.ingest = IngestService(
            settings=settings, db=container.db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover()
        )
        keys = {}
        with container.db.session() as s:
            for name, tenant, role, groups in [
                ("admin", "acme", Role.ADMIN, []),
                ("editor", "acme", Role.EDITOR, []),
                ("editor_hr", "acme", Role.EDITOR, ["hr"]),
                ("agent", "acme", Role.AGENT, []),
                ("agent_hr", "acme", Role.AGENT, ["hr"]),
                ("agent2", "acme", Role.AGENT, []),
                ("globex", "globex", Role.ADMIN, []),
            ]:
                _, keys[name] = repo.create_api_key(
                    session=s, tenant_id=tenant, name=name, role=role, acl_groups=groups
                )
        client = TestClient(create_app(settings, container=container, sweeper=False))
        client.__enter__()
        made.append((client, container))
        return Env(client, container, keys)

    yield make
    for client, container in made:
        client.__exit__(None, None, None)
        container.db.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def env(request, make_env) -> Env:
    """On SQLite and on PostgreSQL (sessions, the ACL-filtered list and LIKE escaping are SQL)."""
    if request.param == "postgresql":
        return make_env(database={"url": request.getfixturevalue("pg_url")})
    return make_env()


# --- a. no placeholder secret ever signs anything -------------------------------------------------------------------


def test_local_mode_generates_a_private_secret_on_first_start(make_settings):
    settings = make_settings()
    assert settings.secret_key == ""  # nothing published to fall back on
    container = fake_container(settings)
    with TestClient(create_app(settings, container=container, sweeper=False)):
        pass
    path = settings.data_dir / "secret_key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    secret = path.read_text().strip()
    assert len(secret) >= 32 and secret == settings.secret_key and secret != OLD_PLACEHOLDER
    # the next start keeps it (sessions' CSRF tokens survive restarts); another data dir gets another one
    again = make_settings()
    assert again.ensure_secret_key() == secret
    container.db.dispose()


def test_placeholder_secret_is_refused_in_every_mode(make_settings):
    for environment in ("local", "production"):
        with pytest.raises(ValidationError, match="placeholder"):
            make_settings(
                environment=environment, secret_key=OLD_PLACEHOLDER, database={"url": "postgresql+psycopg://x@db/k"}
            )
    with pytest.raises(ValidationError, match="KBQA_SECRET_KEY"):
        make_settings(environment="production", database={"url": "postgresql+psycopg://x@db/k"})


def test_cookie_forged_with_a_known_secret_is_refused(env):
    uid = env.new_user()["id"]
    browser, r = env.login()
    assert r.status_code == 200
    future_ms = int((time.time() + 3600) * 1000)
    for secret in (OLD_PLACEHOLDER, env.container.settings.secret_key):
        payload = f"u:{uid}.{future_ms}"
        cookie = f"{payload}.{hmac.new(secret.encode(), payload.encode(), hashlib.sha256).hexdigest()}"
        forger = TestClient(env.app, cookies={SESSION_COOKIE: cookie})
        assert forger.get("/api/v1/auth/me").status_code == 401
        assert forger.get("/api/v1/documents").status_code == 401


# --- b. server-side sessions ----------------------------------------------------------------------------------------


def test_cookie_carries_only_an_opaque_id_of_a_stored_session(env):
    from core.db.models import LoginSession

    uid = env.new_user()["id"]
    browser, _ = env.login()
    token = browser.cookies[SESSION_COOKIE]
    assert uid not in token and len(token) >= 40
    with env.container.db.session() as s:
        row = s.get(LoginSession, hashlib.sha256(token.encode()).hexdigest())
        assert row is not None and (row.principal_kind, row.principal_id, row.tenant_id) == ("user", uid, "acme")
        assert row.revoked_at is None and row.created_at is not None and row.last_seen_at is not None
        assert s.get(LoginSession, token) is None  # the token itself is not stored


def test_logout_ends_the_session_on_the_server(env):
    env.new_user()
    browser, r = env.login()
    token = browser.cookies[SESSION_COOKIE]
    csrf = {"X-CSRF-Token": r.json()["csrf_token"]}
    assert browser.delete("/api/v1/auth/session", headers=csrf).status_code == 204
    replay = TestClient(env.app, cookies={SESSION_COOKIE: token})
    assert replay.get("/api/v1/auth/me").status_code == 401


def test_admin_signs_a_user_out_everywhere(env):
    uid = env.new_user()["id"]
    laptop, _ = env.login()
    phone, _ = env.login()
    assert laptop.get("/api/v1/auth/me").status_code == phone.get("/api/v1/auth/me").status_code == 200
    assert env.client.delete(f"/api/v1/users/{uid}/sessions", headers=env.h("globex")).status_code == 404
    assert env.client.delete(f"/api/v1/users/{uid}/sessions", headers=env.h("editor")).status_code == 403
    assert env.client.delete(f"/api/v1/users/{uid}/sessions", headers=env.h("admin")).status_code == 204
    assert laptop.get("/api/v1/auth/me").status_code == phone.get("/api/v1/auth/me").status_code == 401
    assert env.login()[1].status_code == 200  # the account itself still works
    events = env.client.get("/api/v1/audit?action=session.revoke_all", headers=env.h("admin")).json()["events"]
    assert events and events[0]["target"] == uid and events[0]["detail"]["sessions"] == 2


def test_user_signs_themselves_out_everywhere(env):
    env.new_user()
    laptop, r = env.login()
    phone, _ = env.login()
    csrf = {"X-CSRF-Token": r.json()["csrf_token"]}
    assert laptop.delete("/api/v1/auth/sessions", headers=csrf).status_code == 204
    assert laptop.get("/api/v1/auth/me").status_code == phone.get("/api/v1/auth/me").status_code == 401


def test_disabling_ends_sessions_for_good(env):
    uid = env.new_user()["id"]
    browser, _ = env.login()
    env.client.patch(f"/api/v1/users/{uid}", json={"disabled": True}, headers=env.h("admin"))
    env.client.patch(f"/api/v1/users/{uid}", json={"disabled": False}, headers=env.h("admin"))
    # re-enabling the account does not bring the old session back
    assert browser.get("/api/v1/auth/me").status_code == 401


def test_admin_password_reset_and_key_revocation_end_sessions(env):
    from core.db.models import LoginSession

    uid = env.new_user()["id"]
    browser, _ = env.login()
    r = env.client.patch(f"/api/v1/users/{uid}", json={"password": "another long passphrase"}, headers=env.h("admin"))
    assert r.status_code == 200
    assert browser.get("/api/v1/auth/me").status_code == 401
    created = env.client.post("/api/v1/keys", json={"name": "kiosk", "role": "agent"}, headers=env.h("admin")).json()
    kiosk = TestClient(env.app)
    assert kiosk.post("/api/v1/auth/session", json={"api_key": created["key"]}).status_code == 200
    assert env.client.delete(f"/api/v1/keys/{created['id']}", headers=env.h("admin")).status_code == 204
    assert kiosk.get("/api/v1/auth/me").status_code == 401
    with env.container.db.session() as s:
        assert all(row.revoked_at is not None for row in s.query(LoginSession))


def test_sessions_expire_and_old_rows_are_pruned(env):
    import datetime as dt

    from core.db.models import LoginSession

    env.new_user()
    browser, _ = env.login()
    with env.container.db.session() as s:
        (row,) = s.query(LoginSession).all()
        row.created_at = row.created_at - dt.timedelta(hours=13)
    assert browser.get("/api/v1/auth/me").status_code == 401  # 12 h at most, however active
    env.login()
    with env.container.db.session() as s:
        assert s.query(LoginSession).count() == 1  # the expired row went when the next session was opened


# --- c. ACL groups apply to document metadata, listing, title search and management ---------------------------------


def test_documents_outside_your_groups_are_invisible(env):
    hr = env.add_document("payroll-2026.md", ["hr"])
    public = env.add_document("handbook.md")

    def listed(key: str, q: str | None = None) -> set[str]:
        r = env.client.get("/api/v1/documents", params={"q": q} if q else None, headers=env.h(key))
        assert r.status_code == 200
        return {d["id"] for d in r.json()["documents"]}

    assert listed("agent") == listed("editor") == {public}
    assert listed("agent", q="payroll") == set()
    assert listed("agent_hr") == listed("editor_hr") == listed("admin") == {hr, public}
    assert listed("agent_hr", q="payroll") == {hr}
    for key in ("agent", "editor"):
        r = env.client.get(f"/api/v1/documents/{hr}", headers=env.h(key))
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert "payroll" not in r.text
    assert env.client.get(f"/api/v1/documents/{hr}", headers=env.h("agent_hr")).json()["title"] == "payroll-2026"


def test_editors_manage_only_documents_they_may_read(env):
    hr = env.add_document("payroll.md", ["hr"])
    with env.container.db.session() as s:  # its first ingestion is over (the fake dispatcher runs nothing)
        repo.latest_job(session=s, document_id=hr).status = "indexed"
    # reindex, delete: as if the document did not exist
    for method, path in (("POST", f"/api/v1/documents/{hr}/reindex"), ("DELETE", f"/api/v1/documents/{hr}")):
        r = env.client.request(method, path, headers=env.h("editor"))
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (method, r.text)
    # replace by uploading the same file name, with new groups: the hr document is left alone
    r = env.client.post(
        "/api/v1/documents",
        files={"files": ("payroll.md", b"# forged payroll", "text/markdown")},
        data={"acl_groups": "everyone"},
        headers=env.h("editor"),
    )
    assert r.status_code == 202, r.text
    assert r.json()["documents"][0]["id"] != hr
    doc = env.client.get(f"/api/v1/documents/{hr}", headers=env.h("admin")).json()
    assert (doc["version"], doc["acl_groups"]) == (1, ["hr"])
    # uploading the hr document's exact bytes does not reveal it either
    r = env.client.post(
        "/api/v1/documents",
        files={"files": ("copy.md", b"# payroll.md\n\ntext", "text/markdown")},
        headers=env.h("editor"),
    )
    assert r.status_code == 409 and hr not in r.text
    # an editor in the group, and an admin, may manage it
    assert env.client.post(f"/api/v1/documents/{hr}/reindex", headers=env.h("editor_hr")).status_code == 202
    r = env.client.post(
        "/api/v1/documents",
        files={"files": ("payroll.md", b"# payroll v2", "text/markdown")},
        headers=env.h("editor_hr"),
    )
    assert r.json()["documents"][0]["id"] == hr and r.json()["documents"][0]["version"] == 2
    assert env.client.delete(f"/api/v1/documents/{hr}", headers=env.h("admin")).status_code == 204


# --- d. body-size limit before parsing and before authentication ----------------------------------------------------


def test_oversized_json_is_refused_before_authentication(env):
    big = b'{"question": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    r = env.client.post("/api/v1/ask", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == "payload_too_large" and r.json()["error"]["details"]["limit_bytes"] == 1048576
    assert r.headers["x-request-id"]


def test_declared_huge_body_is_refused_without_reading_it(env):
    r = env.client.post(
        "/api/v1/ask",
        content=b'{"question": "hi"}',
        headers={**env.h("agent"), "Content-Type": "application/json", "Content-Length": str(5 * 1024**3)},
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"


def test_chunked_body_is_cut_off_at_the_limit(env):
    sent = []

    def chunks():  # noqa: ANN202 - no Content-Length: the server must count
        for _ in range(64):
            sent.append(1)
            yield b"x" * 65536

    r = env.client.post(
        "/api/v1/feedback", content=chunks(), headers={**env.h("agent"), "Content-Type": "application/json"}
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"


def test_upload_route_has_a_larger_limit_of_its_own(make_env):
    env = make_env(max_body_bytes=4096, max_upload_request_bytes=64 * 1024)
    r = env.client.post(
        "/api/v1/documents",
        files={"files": ("a.md", b"# A\n\n" + b"a" * 20000, "text/markdown")},
        headers=env.h("editor"),
    )
    assert r.status_code == 202, r.text
    r = env.client.post(
        "/api/v1/feedback",
        json={"message_id": "m", "rating": "up", "comment": "c" * 5000},
        headers=env.h("agent"),
    )
    assert r.status_code == 413 and r.json()["error"]["details"]["limit_bytes"] == 4096


def test_upload_limit_is_never_below_one_allowed_file(make_env):
    env = make_env(ingestion={"max_upload_bytes": 100_000}, max_upload_request_bytes=64 * 1024)
    r = env.client.post(
        "/api/v1/documents", files={"files": ("b.md", b"b" * 90_000, "text/markdown")}, headers=env.h("editor")
    )
    assert r.status_code == 202, r.text
    r = env.client.post(
        "/api/v1/documents", files={"files": ("c.md", b"c" * 200_000, "text/markdown")}, headers=env.h("editor")
    )
    assert r.status_code == 413 and r.json()["error"]["details"]["limit_bytes"] == 100_000 + 64 * 1024


# --- e. proxy headers, uniform login answers, no cross-tenant e-mail leak -------------------------------------------


def serve_options(monkeypatch, settings) -> dict:  # noqa: ANN001
    """The options ``kbqa serve`` passes to uvicorn (captured from a call of the command), less the app and address."""
    import app.cli

    captured: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: captured.update(kw))
    monkeypatch.setattr(app.cli, "_settings", lambda: settings)
    monkeypatch.setattr(app.cli, "migrate_database", lambda s: None)
    app.cli.serve(host=None, port=None, workers=1)
    return {k: v for k, v in captured.items() if k not in ("factory", "host", "port", "workers")}


class RealServer:
    """The app under uvicorn with the options ``kbqa serve`` uses, on a free loopback port, in a thread."""

    def __init__(self, app, options: dict) -> None:  # noqa: ANN001
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **options))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> RealServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _login_codes(url: str, forwarded: list[str]) -> list[int]:
    codes = []
    with httpx.Client(base_url=url, timeout=30) as c:
        for ip in forwarded:
            r = c.post("/api/v1/auth/session", json={"api_key": "kbqa_wrong"}, headers={"X-Forwarded-For": ip})
            codes.append(r.status_code)
    return codes


def test_forwarded_for_from_an_untrusted_peer_does_not_dodge_the_login_limit(make_env, monkeypatch):
    from app.services.quotas import QuotaLimiter

    env = make_env(login_attempts_per_minute=3)
    env.container.limiter = QuotaLimiter(requests_per_minute=0, tokens_per_minute=0, logins_per_minute=3)
    with RealServer(env.app, serve_options(monkeypatch, env.container.settings)) as server:
        codes = _login_codes(server.url, [f"203.0.113.{i}" for i in range(5)])
    assert codes == [401, 401, 401, 429, 429]


def test_forwarded_for_from_a_trusted_proxy_names_the_client(make_env, monkeypatch):
    from app.services.quotas import QuotaLimiter

    env = make_env(login_attempts_per_minute=3, trusted_proxies=["127.0.0.0/8"])
    env.container.limiter = QuotaLimiter(requests_per_minute=0, tokens_per_minute=0, logins_per_minute=3)
    with RealServer(env.app, serve_options(monkeypatch, env.container.settings)) as server:
        assert _login_codes(server.url, [f"203.0.113.{i}" for i in range(5)]) == [401] * 5
        # a client cannot prepend its own entries: the proxy appends the real address on the right
        assert _login_codes(server.url, [f"10.9.9.{i}, 198.51.100.7" for i in range(4)]) == [401, 401, 401, 429]


def test_real_server_answers_a_declared_huge_body_at_once(make_env, monkeypatch):
    import socket

    env = make_env()
    with RealServer(env.app, serve_options(monkeypatch, env.container.settings)) as server:
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            head = (
                "POST /api/v1/ask HTTP/1.1\r\nHost: kbqa\r\nContent-Type: application/json\r\n"
                f"Content-Length: {5 * 1024**3}\r\n\r\n"
            )
            sock.sendall(head.encode() + b'{"question": "')
            # no more body is sent: a server that read it would wait here; the answer may come in several segments
            data = b""
            while b"payload_too_large" not in data:
                piece = sock.recv(65536)
                if not piece:
                    break
                data += piece
            answer = data.decode(errors="replace")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert '"payload_too_large"' in answer


def test_trusted_proxies_must_be_addresses(make_settings):
    with pytest.raises(ValidationError):
        make_settings(api={"trusted_proxies": ["not-an-address"]})


def test_locked_account_answers_like_a_wrong_password_after_the_same_work(env, monkeypatch):
    env.new_user()
    for _ in range(LOCK_AFTER_FAILURES):
        env.login(password="guess guess guess")
    calls = []
    real = auth_module.verify_password
    monkeypatch.setattr(auth_module, "verify_password", lambda p, h: calls.append(h) or real(p, h))
    _, locked = env.login()
    _, unknown = env.login("nobody@acme.example")
    assert locked.status_code == unknown.status_code == 401
    invalid = {"error": {"code": "unauthenticated", "message": "invalid e-mail or password"}}
    assert locked.json() == unknown.json() == invalid
    assert "retry-after" not in locked.headers
    assert len(calls) == 2  # one scrypt verification each: the locked account is not answered faster


def test_creating_a_user_reveals_nothing_about_other_tenants(env):
    env.new_user("ana@acme.example")
    # globex may create the same address: no 409 telling it that acme has such a user
    r = env.client.post(
        "/api/v1/users",
        json={"email": "ANA@acme.example", "role": "agent", "password": "globex passphrase 1"},
        headers=env.h("globex"),
    )
    assert r.status_code == 201, r.text
    # each logs in to their own tenant with their own password
    assert env.login(password=PASSWORD)[1].json()["tenant"] == "acme"
    assert env.login(password="globex passphrase 1")[1].json()["tenant"] == "globex"
    # within a tenant the address stays unique
    r = env.client.post(
        "/api/v1/users",
        json={"email": "ana@acme.example", "role": "agent", "password": PASSWORD},
        headers=env.h("admin"),
    )
    assert r.status_code == 409


def test_same_address_and_password_in_two_tenants_needs_the_tenant(env):
    env.new_user("bo@acme.example")
    env.new_user("bo@acme.example", admin="globex")
    _, r = env.login("bo@acme.example")
    assert r.status_code == 409 and r.json()["error"]["details"]["tenants"] == ["acme", "globex"]
    _, r = env.login("bo@acme.example", tenant="globex")
    assert r.status_code == 200 and r.json()["tenant"] == "globex"


# --- f. the Low list ------------------------------------------------------------------------------------------------


def test_document_filter_treats_percent_and_underscore_literally(env):
    # stored directly: upload file names are sanitised ('%' becomes '_'), titles and older names need not be
    with env.container.db.session() as s:
        for i, name in enumerate(("a_b.md", "axb.md", "100%.md", "plain.md")):
            repo.create_document(session=s, tenant_id="acme", filename=name, title=name[:-3], content_hash=f"{i:064}")

    def found(q: str) -> set[str]:
        r = env.client.get("/api/v1/documents", params={"q": q}, headers=env.h("agent"))
        return {d["filename"] for d in r.json()["documents"]}

    assert found("_") == {"a_b.md"}
    assert found("%") == {"100%.md"}
    assert found("a_b") == {"a_b.md"}
    assert found("plain") == {"plain.md"}


def _answer_message_id(env: Env, key: str) -> str:
    with env.client.stream("POST", "/api/v1/ask", json={"question": "warranty?"}, headers=env.h(key)) as r:
        assert r.status_code == 200
        "".join(r.iter_text())
    conv_id = env.client.get("/api/v1/conversations", headers=env.h(key)).json()["conversations"][0]["id"]
    messages = env.client.get(f"/api/v1/conversations/{conv_id}", headers=env.h(key)).json()["messages"]
    return next(m["id"] for m in messages if m["role"] == "assistant")


def test_feedback_only_on_your_own_answers(env):
    mine = _answer_message_id(env, "agent")
    r = env.client.post("/api/v1/feedback", json={"message_id": mine, "rating": "down"}, headers=env.h("agent2"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = env.client.post("/api/v1/feedback", json={"message_id": mine, "rating": "up"}, headers=env.h("agent"))
    assert r.status_code == 201


def test_streamed_chat_with_invalid_input_is_a_json_error(env):
    for messages in ([{"role": "assistant", "content": "hello"}], [{"role": "user", "content": ""}]):
        r = env.client.post("/v1/chat/completions", json={"stream": True, "messages": messages}, headers=env.h("agent"))
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/json")
        assert r.json()["error"]["code"] == "validation_error"


def test_metrics_can_be_closed_to_anonymous_readers(make_env):
    env = make_env(metrics_token="m" * 40)
    r = env.client.get("/metrics")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
    assert env.client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    # an API key is not the metrics token either
    assert env.client.get("/metrics", headers=env.h("admin")).status_code == 401
    r = env.client.get("/metrics", headers={"Authorization": f"Bearer {'m' * 40}"})
    assert r.status_code == 200 and "kbqa_ingestion_jobs" in r.text


def test_open_metrics_show_only_totals_over_all_tenants(env):
    env.add_document("acme-only.md")
    text = env.client.get("/metrics").text
    assert "kbqa_ingestion_jobs" in text
    assert "acme" not in text and "globex" not in text and "tenant" not in text


def test_who_am_i_and_lists_are_not_cached(env):
    env.new_user()
    browser, _ = env.login()
    assert browser.get("/api/v1/auth/me").headers["cache-control"] == "no-store"
    for path in (
        "/api/v1/documents",
        "/api/v1/conversations",
        "/api/v1/users",
        "/api/v1/keys",
        "/api/v1/audit",
        "/api/v1/usage",
        "/v1/models",
    ):
        r = env.client.get(path, headers=env.h("admin"))
        assert r.status_code == 200 and r.headers["cache-control"] == "no-store", path


def test_acl_group_and_tag_values_are_bounded(env):
    bad_values = ["x" * 65, "a<script>", "tab\there", "quote'd"]
    for value in bad_values:
        for field in ("acl_groups", "tags"):
            r = env.client.post(
                "/api/v1/documents",
                files={"files": ("f.md", b"# f", "text/markdown")},
                data={field: value},
                headers=env.h("editor"),
            )
            assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", (field, value, r.text)
            assert r.json()["error"]["details"]["field"] == field
        r = env.client.post("/api/v1/keys", json={"name": "k", "acl_groups": [value]}, headers=env.h("admin"))
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", value
        r = env.client.post(
            "/api/v1/users",
            json={"email": "x@acme.example", "password": PASSWORD, "acl_groups": [value]},
            headers=env.h("admin"),
        )
        assert r.status_code == 422, value
    r = env.client.get("/api/v1/documents", headers=env.h("admin"))
    assert r.json()["documents"] == []  # nothing was stored by the refused uploads
    ok = env.client.post(
        "/api/v1/documents",
        files={"files": ("g.md", b"# g", "text/markdown")},
        data={"acl_groups": "hr, Team Nord, ops:eu/west", "tags": "policy_2026,v1.2"},
        headers=env.h("admin"),
    )
    assert ok.status_code == 202, ok.text
    doc = env.client.get(f"/api/v1/documents/{ok.json()['documents'][0]['id']}", headers=env.h("admin")).json()
    assert doc["acl_groups"] == ["Team Nord", "hr", "ops:eu/west"] and doc["tags"] == ["policy_2026", "v1.2"]


def test_cli_holds_acl_groups_to_the_same_limits(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from app.cli import cli

    monkeypatch.setenv("KBQA_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    r = runner.invoke(cli, ["keys", "create", "--quiet", "--acl-groups", "hr,<script>"])
    assert r.exit_code == 2 and "ACL groups" in r.output
    r = runner.invoke(cli, ["users", "create", "--email", "a@b.example", "--acl-groups", "x" * 65])
    assert r.exit_code == 2 and "64 characters" in r.output
    r = runner.invoke(cli, ["keys", "create", "--quiet", "--acl-groups", " hr , Team Nord"])
    assert r.exit_code == 0, r.output

"""Users: password login, lockout, roles, disable, password change, admin guards; the audit log and usage per
user — on real, migrated SQLite and PostgreSQL databases with the Fake answer parts of ``test_api_auth_sse``."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.api.auth import LOCK_AFTER_FAILURES
from app.main import create_app
from core.db import repositories as repo
from core.passwords import hash_password, needs_rehash, password_problem, verify_password
from core.types import Role
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

PASSWORD = "correct horse battery"


@pytest.fixture(params=["sqlite", "postgresql"])
def users_api(request, make_settings):
    # PostgreSQL: the session's migrated database, each test rolled back (pg_db)
    db = request.getfixturevalue("pg_db") if request.param == "postgresql" else None
    database = {"url": db.url} if db is not None else {}
    settings = make_settings(api={"requests_per_minute": 0, "tokens_per_minute": 0}, database=database)
    container = fake_container(settings, db=db)
    with container.db.session() as s:
        _, admin_key = repo.create_api_key(session=s, tenant_id="acme", name="ops-key", role=Role.ADMIN)
        _, other_key = repo.create_api_key(session=s, tenant_id="globex", name="globex", role=Role.ADMIN)
    app = create_app(settings, container=container, sweeper=False)
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {admin_key}"}, {"Authorization": f"Bearer {other_key}"}, app
    container.db.dispose()


def new_user(client, admin, email="ana@acme.example", role="agent", **extra):  # noqa: ANN001, ANN201
    r = client.post(
        "/api/v1/users",
        json={"email": email, "name": email.split("@")[0], "role": role, "password": PASSWORD, **extra},
        headers=admin,
    )
    assert r.status_code == 201, r.text
    return r.json()


def login(app, email: str, password: str = PASSWORD):  # noqa: ANN001, ANN201
    """A fresh browser (its own cookie jar) that logged in; returns (client, response)."""
    browser = TestClient(app)
    return browser, browser.post("/api/v1/auth/session", json={"email": email, "password": password})


def test_password_hashing():
    stored = hash_password("s3cret-passphrase")
    assert stored.startswith("scrypt$") and "s3cret" not in stored
    assert verify_password("s3cret-passphrase", stored)
    assert not verify_password("s3cret-passphras", stored)
    assert not verify_password("x", "not-a-hash") and not verify_password("x", "scrypt$1$2$3$%%$%%")
    assert hash_password("same") != hash_password("same")  # salted
    assert not needs_rehash(stored) and needs_rehash(hash_password("p", n=2**10))
    assert password_problem("short") and password_problem(" padded password ") and not password_problem(PASSWORD)


def test_password_login_gives_a_user_session(users_api):
    client, admin, _, app = users_api
    new_user(client, admin, role="editor", acl_groups=["hr", " hr ", "legal"])
    browser, r = login(app, "  Ana@ACME.example ")
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["kind"], body["name"], body["role"], body["tenant"]) == ("user", "ana", "editor", "acme")
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and r.headers["cache-control"] == "no-store"
    me = browser.get("/api/v1/auth/me").json()
    assert me["kind"] == "user" and me["csrf_token"] == body["csrf_token"]
    assert browser.get("/api/v1/documents").status_code == 200
    assert browser.get("/api/v1/users").status_code == 403  # editor, not admin
    # non-GET needs the CSRF token
    assert browser.post("/api/v1/ask", json={"question": "q"}).status_code == 403
    users = client.get("/api/v1/users", headers=admin).json()["users"]
    assert users[0]["acl_groups"] == ["hr", "legal"] and users[0]["last_login_at"] is not None


def test_wrong_password_and_unknown_email_look_the_same(users_api):
    client, admin, _, app = users_api
    new_user(client, admin)
    _, wrong = login(app, "ana@acme.example", "not the password")
    _, unknown = login(app, "nobody@acme.example")
    assert wrong.status_code == unknown.status_code == 401
    assert (
        wrong.json()
        == unknown.json()
        == {"error": {"code": "unauthenticated", "message": "invalid e-mail or password"}}
    )
    for body in ({"email": "ana@acme.example"}, {"api_key": "k", "email": "a@b.c", "password": PASSWORD}, {}):
        r = client.post("/api/v1/auth/session", json=body)
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", body


def test_repeated_failures_lock_the_account_silently(users_api):
    client, admin, _, app = users_api
    new_user(client, admin)
    for _ in range(LOCK_AFTER_FAILURES):
        assert login(app, "ana@acme.example", "guess guess guess")[1].status_code == 401
    _, r = login(app, "ana@acme.example")  # even the right password waits out the lock, told apart from nothing
    assert r.status_code == 401 and r.json() == {
        "error": {"code": "unauthenticated", "message": "invalid e-mail or password"}
    }
    # an administrator's password reset clears the lock
    uid = client.get("/api/v1/users", headers=admin).json()["users"][0]["id"]
    new_password = "a brand new passphrase"
    assert client.patch(f"/api/v1/users/{uid}", json={"password": new_password}, headers=admin).status_code == 200
    assert login(app, "ana@acme.example", new_password)[1].status_code == 200
    actions = [e["action"] for e in client.get("/api/v1/audit?action=session.", headers=admin).json()["events"]]
    assert actions.count("session.login_failed") == LOCK_AFTER_FAILURES + 1 and actions[0] == "session.login"


def test_disabling_a_user_ends_their_sessions(users_api):
    client, admin, _, app = users_api
    uid = new_user(client, admin)["id"]
    browser, r = login(app, "ana@acme.example")
    assert browser.get("/api/v1/documents").status_code == 200
    assert client.patch(f"/api/v1/users/{uid}", json={"disabled": True}, headers=admin).json()["disabled"] is True
    assert browser.get("/api/v1/documents").status_code == 401
    _, again = login(app, "ana@acme.example")
    assert again.status_code == 403 and "disabled" in again.json()["error"]["message"]
    client.patch(f"/api/v1/users/{uid}", json={"disabled": False}, headers=admin)
    assert login(app, "ana@acme.example")[1].status_code == 200


def test_password_change_ends_other_sessions(users_api):
    client, admin, _, app = users_api
    new_user(client, admin)
    laptop, r1 = login(app, "ana@acme.example")
    phone, _ = login(app, "ana@acme.example")
    csrf = r1.json()["csrf_token"]
    body = {"current_password": "wrong wrong wrong", "new_password": "a brand new passphrase"}
    assert laptop.post("/api/v1/auth/password", json=body, headers={"X-CSRF-Token": csrf}).status_code == 401
    r = laptop.post("/api/v1/auth/password", json={**body, "new_password": "short"}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 422 and "at least" in r.json()["error"]["message"]
    body["current_password"] = PASSWORD
    changed = laptop.post("/api/v1/auth/password", json=body, headers={"X-CSRF-Token": csrf})
    assert changed.status_code == 200, changed.text
    assert laptop.get("/api/v1/auth/me").status_code == 200  # this browser got a fresh session
    assert phone.get("/api/v1/auth/me").status_code == 401
    assert login(app, "ana@acme.example")[1].status_code == 401
    assert login(app, "ana@acme.example", "a brand new passphrase")[1].status_code == 200
    # API keys have no password
    r = client.post("/api/v1/auth/password", json=body, headers=admin)
    assert r.status_code == 403


def test_admin_guards_and_validation(users_api):
    client, admin, _, app = users_api
    boss = new_user(client, admin, email="boss@acme.example", role="admin")
    dup = client.post(
        "/api/v1/users", json={"email": "BOSS@acme.example", "role": "agent", "password": PASSWORD}, headers=admin
    )
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "conflict"
    for bad in ({"email": "not-an-email", "password": PASSWORD}, {"email": "x@acme.example", "password": "short"}):
        r = client.post("/api/v1/users", json=bad, headers=admin)
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", bad
    browser, r = login(app, "boss@acme.example")
    csrf = {"X-CSRF-Token": r.json()["csrf_token"]}
    for change in ({"role": "agent"}, {"disabled": True}):
        r = browser.patch(f"/api/v1/users/{boss['id']}", json=change, headers=csrf)
        assert r.status_code == 409 and "yourself" in r.json()["error"]["message"]
    # the only admin user cannot be demoted by a key either
    r = client.patch(f"/api/v1/users/{boss['id']}", json={"role": "editor"}, headers=admin)
    assert r.status_code == 409 and "no active admin" in r.json()["error"]["message"]
    assert client.patch("/api/v1/users/nope", json={"name": "x"}, headers=admin).status_code == 404


def test_tenants_do_not_see_each_others_users_or_audit(users_api):
    client, admin, other_admin, _ = users_api
    uid = new_user(client, admin)["id"]
    assert client.get("/api/v1/users", headers=other_admin).json() == {"users": []}
    assert client.patch(f"/api/v1/users/{uid}", json={"role": "admin"}, headers=other_admin).status_code == 404
    assert all(e["action"] != "user.create" for e in client.get("/api/v1/audit", headers=other_admin).json()["events"])


def test_audit_log_lists_who_did_what_with_filters_and_pages(users_api):
    client, admin, _, app = users_api
    new_user(client, admin)
    browser, r = login(app, "ana@acme.example")
    csrf = {"X-CSRF-Token": r.json()["csrf_token"]}
    with browser.stream("POST", "/api/v1/ask", json={"question": "warranty?"}, headers=csrf) as resp:
        assert resp.status_code == 200
        "".join(resp.iter_text())
    created = client.post("/api/v1/keys", json={"name": "bot", "role": "agent"}, headers=admin).json()
    client.delete(f"/api/v1/keys/{created['id']}", headers=admin)
    events = client.get("/api/v1/audit", headers=admin).json()["events"]
    got = [(e["action"], e["actor_kind"], e["actor_name"]) for e in events]
    assert got[:5] == [
        ("key.revoke", "key", "ops-key"),
        ("key.create", "key", "ops-key"),
        ("ask", "user", "ana"),
        ("session.login", "user", "ana"),
        ("user.create", "key", "ops-key"),
    ]
    ask = events[2]
    assert ask["detail"] == {"question": "warranty?"}
    assert [e["action"] for e in client.get("/api/v1/audit?action=key.", headers=admin).json()["events"]] == [
        "key.revoke",
        "key.create",
    ]
    # a LIKE wildcard in the filter is taken literally
    assert client.get("/api/v1/audit?action=%25", headers=admin).json()["events"] == []
    page1 = client.get("/api/v1/audit?limit=2", headers=admin).json()
    assert len(page1["events"]) == 2 and page1["next_before"] == page1["events"][-1]["id"]
    page2 = client.get(f"/api/v1/audit?limit=2&before={page1['next_before']}", headers=admin).json()
    assert page2["events"][0]["id"] < page1["events"][-1]["id"]
    assert client.get("/api/v1/audit", headers=csrf, cookies=browser.cookies).status_code in (401, 403)
    assert browser.get("/api/v1/audit").status_code == 403
    # usage is recorded per user too, named by the user
    usage = client.get("/api/v1/usage", headers=admin).json()["usage"]
    assert [(u["actor_kind"], u["actor_name"], u["requests"]) for u in usage] == [("user", "ana", 1)]


def test_conversations_belong_to_whoever_started_them(users_api):
    client, admin, _, app = users_api
    new_user(client, admin, email="ana@acme.example")
    new_user(client, admin, email="ben@acme.example")
    ana, r = login(app, "ana@acme.example")
    with ana.stream(
        "POST", "/api/v1/ask", json={"question": "q"}, headers={"X-CSRF-Token": r.json()["csrf_token"]}
    ) as resp:
        "".join(resp.iter_text())
    (conv,) = ana.get("/api/v1/conversations").json()["conversations"]
    ben, r = login(app, "ben@acme.example")
    assert ben.get("/api/v1/conversations").json()["conversations"] == []
    assert ben.get(f"/api/v1/conversations/{conv['id']}").status_code == 404
    follow_up = ben.post(
        "/api/v1/ask",
        json={"question": "and?", "conversation_id": conv["id"]},
        headers={"X-CSRF-Token": r.json()["csrf_token"]},
    )
    assert follow_up.status_code == 404


def test_nul_characters_are_a_client_error_on_postgresql(make_settings, pg_db):
    """PostgreSQL refuses NUL in text; anything a user sends must get a JSON 4xx, never a 500."""
    settings = make_settings(database={"url": pg_db.url}, api={"requests_per_minute": 0, "tokens_per_minute": 0})
    container = fake_container(settings, db=pg_db)
    with container.db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="acme", name="k", role=Role.ADMIN)
    admin = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(settings, container=container, sweeper=False)) as client:
        r = client.post(
            "/api/v1/users", json={"email": "a\u0000b@acme.example", "password": PASSWORD, "name": "x"}, headers=admin
        )
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", r.text
        r = client.post("/api/v1/auth/session", json={"email": "a\u0000@acme.example", "password": PASSWORD})
        assert r.status_code == 422, r.text
        assert client.get("/api/v1/documents?q=a%00b", headers=admin).status_code == 422
        assert client.get("/api/v1/users", headers=admin).status_code == 200
    container.db.dispose()


def test_login_attempts_per_address_are_limited(make_settings):
    """Guessing across many accounts from one address runs into the per-address login bucket (429, Retry-After)."""
    from app.services.quotas import QuotaLimiter

    settings = make_settings()
    limiter = QuotaLimiter(requests_per_minute=0, tokens_per_minute=0, logins_per_minute=3)
    container = fake_container(settings, limiter=limiter)
    with TestClient(create_app(settings, container=container, sweeper=False)) as client:
        codes = [
            client.post("/api/v1/auth/session", json={"email": f"u{i}@acme.example", "password": PASSWORD}).status_code
            for i in range(4)
        ]
        assert codes == [401, 401, 401, 429]
        r = client.post("/api/v1/auth/session", json={"api_key": "kbqa_guess"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert "login attempts" in r.json()["error"]["message"]
    container.db.dispose()

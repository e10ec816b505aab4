"""API edge: auth (401/403 JSON), every route protected, SSE event sequence, JSON errors — on a real SQLite database
with fake answer/retrieval components (named Fake*)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.cli import migrate_database
from app.main import Container, create_app
from app.services.metrics import Metrics
from app.services.quotas import QuotaLimiter
from core.db import repositories as repo
from core.db.session import Database
from core.types import Role
from tests.fakes import FakeAnswers, FakeEmbedder, FakeIndexes, FakeRetriever, FakeStore
from tests.routes import api_routes
from tests.sse import parse_sse

pytestmark = pytest.mark.unit

PUBLIC = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("POST", "/api/v1/auth/session"),
    ("DELETE", "/api/v1/auth/session"),
    ("GET", "/api/v1/auth/methods"),
    ("GET", "/api/v1/auth/oidc/login"),
    ("GET", "/api/v1/auth/oidc/callback"),
}


def fake_container(settings, db: Database | None = None, **parts) -> Container:  # noqa: ANN001
    """A container on a real, migrated SQLite database with Fake retrieval/answer parts (override any by name); with
    ``db`` (e.g. the ``pg_db`` fixture, already migrated) on that database instead."""
    if db is None:
        migrate_database(settings)
        db = Database(settings.database_url)
    defaults = dict(
        embedder=FakeEmbedder(),
        indexes=FakeIndexes(),
        chunk_store=FakeStore(),
        retriever=FakeRetriever(),
        answers=FakeAnswers(),
        ingest=None,
        dispatcher=None,
        limiter=QuotaLimiter(requests_per_minute=0, tokens_per_minute=0),
        metrics=Metrics(),
    )
    return Container(settings=settings, db=db, **{**defaults, **parts})


@pytest.fixture
def api(make_settings):
    settings = make_settings(api={"requests_per_minute": 0, "tokens_per_minute": 0})
    container = fake_container(settings)
    db = container.db
    keys = {}
    with db.session() as s:
        for role in Role:
            _, keys[role] = repo.create_api_key(session=s, tenant_id="acme", name=role.value, role=role)
    app = create_app(settings, container=container, sweeper=False)
    with TestClient(app) as client:
        yield client, keys, container
    db.dispose()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_every_route_declares_a_role(api):
    client, _, _ = api
    unprotected = []
    routes = api_routes(client.app)
    assert len(routes) > 20  # the walk finds the routers' routes, however FastAPI nests them
    for route in routes:
        for method in route.methods - {"HEAD", "OPTIONS"}:
            if (method, route.path) in PUBLIC:
                continue
            deps = [d.call for d in route.dependant.dependencies]
            if not any(hasattr(call, "required_role") for call in deps):
                unprotected.append(f"{method} {route.path}")
    assert not unprotected, f"routes without a role: {unprotected}"


def test_missing_key_gets_401_json(api):
    client, _, _ = api
    for method, path in [
        ("POST", "/api/v1/ask"),
        ("GET", "/api/v1/documents"),
        ("GET", "/api/v1/search?q=x"),
        ("GET", "/api/v1/keys"),
        ("POST", "/v1/chat/completions"),
    ]:
        r = client.request(method, path, json={"question": "hi"})
        assert r.status_code == 401, (method, path, r.text)
        assert r.json()["error"]["code"] == "unauthenticated"


def test_wrong_key_gets_401_json(api):
    client, _, _ = api
    r = client.post("/api/v1/ask", json={"question": "hi"}, headers=auth("kbqa_not-a-real-key"))
    assert r.status_code == 401
    assert r.json() == {"error": {"code": "unauthenticated", "message": "invalid or revoked API key"}}
    r = client.get("/api/v1/documents", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"


def test_role_is_enforced(api):
    client, keys, _ = api
    r = client.get("/api/v1/keys", headers=auth(keys[Role.AGENT]))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert client.get("/api/v1/keys", headers=auth(keys[Role.ADMIN])).status_code == 200


def test_revoked_key_is_refused(api):
    client, keys, _ = api
    created = client.post("/api/v1/keys", json={"name": "temp", "role": "agent"}, headers=auth(keys[Role.ADMIN]))
    assert created.status_code == 201
    secret, key_id = created.json()["key"], created.json()["id"]
    assert client.get("/api/v1/documents", headers=auth(secret)).status_code == 200
    assert client.delete(f"/api/v1/keys/{key_id}", headers=auth(keys[Role.ADMIN])).status_code == 204
    assert client.get("/api/v1/documents", headers=auth(secret)).status_code == 401


def test_sse_event_sequence(api):
    client, keys, container = api
    with client.stream(
        "POST", "/api/v1/ask", json={"question": "How long is the hub warranty?"}, headers=auth(keys[Role.AGENT])
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-accel-buffering"] == "no"
        body = "".join(r.iter_text())
    events = parse_sse(body)
    types = [t for t, _ in events]
    assert types[0] == "meta" and types[1] == "sources" and types[-1] == "done"
    assert types.index("citations") > max(i for i, t in enumerate(types) if t == "token")
    answer = "".join(d["text"] for t, d in events if t == "token")
    assert "[1]" in answer
    # the turn is stored: the conversation holds the question and the answer, usage is recorded
    conv_id = container.answers.calls[0]["conversation_id"]
    conv = client.get(f"/api/v1/conversations/{conv_id}", headers=auth(keys[Role.AGENT])).json()
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
    assert conv["messages"][1]["content"] == answer
    usage = client.get("/api/v1/usage", headers=auth(keys[Role.ADMIN])).json()["usage"]
    assert any(u["completion_tokens"] == 7 and u["requests"] == 1 for u in usage)


def test_feedback_on_an_answer(api):
    client, keys, container = api
    with client.stream("POST", "/api/v1/ask", json={"question": "q"}, headers=auth(keys[Role.AGENT])) as r:
        body = "".join(r.iter_text())
    message_id = container.answers.calls[0]["message_id"]
    assert parse_sse(body)
    r = client.post(
        "/api/v1/feedback",
        json={"message_id": message_id, "rating": "down", "comment": "wrong"},
        headers=auth(keys[Role.AGENT]),
    )
    assert r.status_code == 201
    r = client.post("/api/v1/feedback", json={"message_id": "nope", "rating": "up"}, headers=auth(keys[Role.AGENT]))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_validation_errors_are_json(api):
    client, keys, _ = api
    r = client.post("/api/v1/ask", json={"question": ""}, headers=auth(keys[Role.AGENT]))
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error"
    r = client.post(
        "/api/v1/ask", content=b"{not json", headers={**auth(keys[Role.AGENT]), "Content-Type": "application/json"}
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error"
    r = client.get("/api/v1/nope", headers=auth(keys[Role.AGENT]))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_browser_session_needs_csrf(api):
    client, keys, _ = api
    r = client.post("/api/v1/auth/session", json={"api_key": keys[Role.AGENT]})
    assert r.status_code == 200
    csrf = r.json()["csrf_token"]
    assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
    assert client.get("/api/v1/auth/me").status_code == 200
    assert client.post("/api/v1/ask", json={"question": "q"}).status_code == 403
    with client.stream("POST", "/api/v1/ask", json={"question": "q"}, headers={"X-CSRF-Token": csrf}) as r2:
        assert r2.status_code == 200
        "".join(r2.iter_text())
    assert client.delete("/api/v1/auth/session", headers={"X-CSRF-Token": csrf}).status_code == 204


def test_health_and_openapi(api):
    client, _, _ = api
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    spec = client.get("/openapi.json").json()
    assert "/api/v1/ask" in spec["paths"] and "/v1/chat/completions" in spec["paths"]
    assert client.get("/docs").status_code == 200


def test_openai_compatible_completion(api):
    client, keys, _ = api
    r = client.post(
        "/v1/chat/completions",
        json={"model": "kbqa", "messages": [{"role": "user", "content": "q"}]},
        headers=auth(keys[Role.AGENT]),
    )
    assert r.status_code == 200
    body = r.json()
    assert body["choices"][0]["message"]["content"] == "The hub has a 24-month warranty [1]."
    assert body["usage"]["completion_tokens"] == 7
    assert body["kbqa"]["citations"][0]["chunk_id"] == "c1"
    with client.stream(
        "POST",
        "/v1/chat/completions",
        headers=auth(keys[Role.AGENT]),
        json={"stream": True, "messages": [{"role": "user", "content": "q"}]},
    ) as r:
        lines = [ln for ln in "".join(r.iter_text()).splitlines() if ln.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    text = "".join(json.loads(ln[6:])["choices"][0]["delta"].get("content", "") for ln in lines[:-1])
    assert text == "The hub has a 24-month warranty [1]."


def test_request_quota_gives_429_with_retry_after(api):
    client, keys, container = api
    container.limiter = QuotaLimiter(requests_per_minute=2, tokens_per_minute=0)
    codes = [client.get("/api/v1/documents", headers=auth(keys[Role.AGENT])).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    r = client.get("/api/v1/documents", headers=auth(keys[Role.AGENT]))
    assert r.json()["error"]["code"] == "rate_limited" and int(r.headers["Retry-After"]) >= 1
    # another key has its own bucket
    assert client.get("/api/v1/documents", headers=auth(keys[Role.EDITOR])).status_code == 200


def test_token_quota_blocks_new_answers_once_spent(api):
    client, keys, container = api
    container.limiter = QuotaLimiter(requests_per_minute=0, tokens_per_minute=5)
    with client.stream("POST", "/api/v1/ask", json={"question": "q"}, headers=auth(keys[Role.AGENT])) as r:
        assert r.status_code == 200
        "".join(r.iter_text())  # this answer spends 7 completion tokens
    r = client.post("/api/v1/ask", json={"question": "q"}, headers=auth(keys[Role.AGENT]))
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited" and "Retry-After" in r.headers


@pytest.mark.integration
def test_redis_backed_quota_is_shared(redis_url):
    import redis

    redis.Redis.from_url(redis_url).delete("kbqa:quota:req:k1")
    one = QuotaLimiter(requests_per_minute=3, tokens_per_minute=0, redis_url=redis_url)
    two = QuotaLimiter(requests_per_minute=3, tokens_per_minute=0, redis_url=redis_url)
    one.check_request("k1")
    two.check_request("k1")
    one.check_request("k1")
    from core.errors import AppError

    with pytest.raises(AppError):
        two.check_request("k1")


def test_security_headers_on_the_app_and_the_api(api):
    from app.main import CSP

    client, keys, _ = api
    for path in ("/healthz", "/api/v1/documents", "/api/v1/nope"):
        r = client.get(path, headers=auth(keys[Role.AGENT]))
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["x-frame-options"] == "DENY" and r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["content-security-policy"] == CSP
        assert "strict-transport-security" not in r.headers  # local mode serves plain HTTP
    assert "content-security-policy" not in client.get("/docs").headers  # Swagger UI loads from a CDN

"""The /mcp endpoint's auth, tenant and quota mapping, in process: API keys as for the REST API (401 JSON without a
key or with a bad one), the key's tenant and ACL groups on every tool, tool calls counted against the request quota,
errors as tool errors carrying the REST API's error JSON. Real SQLite database, Fake answer and retrieval parts (those
of ``test_api_auth_sse``); the real server and the SDK's client are in tests/integration/test_mcp_server.py."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.quotas import QuotaLimiter
from core.db import repositories as repo
from core.types import ChunkRecord, Role
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _chunk(tenant: str, chunk_id: str, groups: tuple[str, ...] = ()) -> ChunkRecord:
    return ChunkRecord(
        id=chunk_id,
        tenant_id=tenant,
        document_id="d-" + chunk_id,
        document_version=1,
        title="Hub manual",
        text="The hub has a 24-month warranty.",
        section_path=("Warranty",),
        acl_groups=groups,
    )


CHUNKS = {
    "acme-1": _chunk("acme", "acme-1"),
    "acme-finance": _chunk("acme", "acme-finance", ("finance",)),
    "globex-1": _chunk("globex", "globex-1"),
}


@pytest.fixture
def mcp(make_settings):
    settings = make_settings(api={"requests_per_minute": 0, "tokens_per_minute": 0})
    store = SimpleNamespace(get_many=lambda ids: {i: CHUNKS[i] for i in ids if i in CHUNKS})
    container = fake_container(settings, chunk_store=store)
    keys: dict[str, str] = {}
    with container.db.session() as s:
        _, keys["acme"] = repo.create_api_key(session=s, tenant_id="acme", name="a", role=Role.AGENT)
        _, keys["acme-admin"] = repo.create_api_key(session=s, tenant_id="acme", name="b", role=Role.ADMIN)
        _, keys["globex"] = repo.create_api_key(session=s, tenant_id="globex", name="c", role=Role.ADMIN)
    app = create_app(settings, container=container, sweeper=False)
    with TestClient(app) as client:
        yield client, keys, container
    container.db.dispose()


def rpc(client: TestClient, key: str | None, method: str, params: dict[str, Any]) -> Any:
    headers = dict(HEADERS)
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def tool(client: TestClient, key: str, name: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    r = rpc(client, key, "tools/call", {"name": name, "arguments": arguments})
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    body = json.loads(result["content"][0]["text"])
    assert result.get("structuredContent") == body
    return bool(result.get("isError")), body


@pytest.mark.parametrize("authorization", [None, "Bearer kbqa_not-a-real-key", "Basic abc", "Bearer "])
def test_no_or_bad_key_gets_the_rest_apis_401(mcp, authorization):
    client, _, _ = mcp
    headers = dict(HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    r = client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
    assert r.headers["www-authenticate"] == "Bearer"


def test_a_key_lists_the_three_tools(mcp):
    client, keys, _ = mcp
    r = rpc(client, keys["acme"], "tools/list", {})
    assert r.status_code == 200, r.text
    assert {t["name"] for t in r.json()["result"]["tools"]} == {
        "search_knowledge_base",
        "ask_knowledge_base",
        "get_passage",
    }


def test_get_passage_sees_only_the_keys_tenant_and_groups(mcp):
    client, keys, _ = mcp
    failed, body = tool(client, keys["acme"], "get_passage", chunk_id="acme-1")
    assert not failed and body["chunk_id"] == "acme-1" and body["section_path"] == ["Warranty"]
    for key, chunk_id in [("acme", "globex-1"), ("globex", "acme-1"), ("acme", "acme-finance"), ("acme", "none")]:
        failed, body = tool(client, keys[key], "get_passage", chunk_id=chunk_id)
        assert failed and body == {"error": {"code": "not_found", "message": "passage not found"}}, (key, chunk_id)
    failed, body = tool(client, keys["acme-admin"], "get_passage", chunk_id="acme-finance")  # admins see all groups
    assert not failed and body["chunk_id"] == "acme-finance"


def test_search_and_ask_run_with_the_keys_filter(mcp):
    client, keys, container = mcp
    failed, found = tool(client, keys["globex"], "search_knowledge_base", query="warranty", top_k=3)
    assert not failed
    assert found["results"][0] | {"rank": 1, "chunk_id": "c1", "title": "Doc"} == found["results"][0]
    failed, answer = tool(client, keys["acme"], "ask_knowledge_base", question="How long is the hub warranty?")
    assert not failed and answer["answer"] == "The hub has a 24-month warranty [1]."
    assert answer["citations"] == [
        {
            "n": 1,
            "chunk_id": "c1",
            "document_id": None,
            "title": None,
            "section": "",
            "page_start": None,
            "page_end": None,
        }
    ]
    call = container.answers.calls[-1]
    assert call["flt"].tenant_id == "acme" and call["question"] == "How long is the hub warranty?"
    with container.db.session() as s:
        events = repo.list_audit(session=s, tenant_id="acme", action="ask", actor_id=None, before=None, limit=5)
        assert [e.target for e in events] == [answer["conversation_id"]]


def test_bad_arguments_are_validation_errors(mcp):
    client, keys, _ = mcp
    for name, args in [
        ("search_knowledge_base", {"query": " "}),
        ("search_knowledge_base", {"query": "x", "top_k": 0}),
        ("ask_knowledge_base", {"question": "x" * 4001}),
    ]:
        failed, body = tool(client, keys["acme"], name, **args)
        assert failed and body["error"]["code"] == "validation_error", (name, args)


def test_tool_calls_count_against_the_request_quota(mcp):
    client, keys, container = mcp
    container.limiter = QuotaLimiter(requests_per_minute=3, tokens_per_minute=0)
    codes = [tool(client, keys["acme"], "get_passage", chunk_id="none")[1]["error"]["code"] for _ in range(4)]
    assert codes == ["not_found", "not_found", "not_found", "rate_limited"]
    assert client.get("/api/v1/chunks/none", headers={"Authorization": f"Bearer {keys['acme']}"}).status_code == 429
    assert tool(client, keys["globex"], "get_passage", chunk_id="none")[1]["error"]["code"] == "not_found"  # per key

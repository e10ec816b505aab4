"""The MCP tools on a real server: `kbqa serve` in a subprocess (embedded mode, fresh data dir, part of the demo
knowledge base ingested with `kbqa ingest`), called through the MCP SDK's own streamable-HTTP client. The tools answer
from the demo KB with citations, refuse requests without a key or with a bad one, keep tenants and ACL groups apart,
and count against the same request quota as the REST API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.servers import free_port, stop_process, wait_ready

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
KB = REPO / "demo" / "kb"
PUBLIC = [KB / "return-and-warranty-policy.docx", KB / "troubleshooting-guide.pdf"]
RESTRICTED = KB / "billing-faq.md"  # uploaded for ACL group "finance" only
REQUESTS_PER_MINUTE = 30


@dataclass
class Server:
    url: str
    env: dict[str, str]

    def cli(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    def key(self, *, tenant: str = "default", role: str = "agent", groups: str | None = None) -> str:
        extra = ["--acl-groups", groups] if groups else []
        return (
            self.cli("keys", "create", "--quiet", "--tenant", tenant, "--role", role, *extra).strip().splitlines()[-1]
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("kbqa-mcp")
    port = free_port()
    env = {
        **os.environ,
        "KBQA_DATA_DIR": str(root / "data"),
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "KBQA_API__REQUESTS_PER_MINUTE": str(REQUESTS_PER_MINUTE),
        "KBQA_API__TOKENS_PER_MINUTE": "0",
    }
    env.pop("KBQA_DATABASE__URL", None)
    env.pop("KBQA_REDIS_URL", None)
    srv = Server(url=f"http://127.0.0.1:{port}", env=env)
    srv.cli("ingest", *map(str, PUBLIC))
    log_path = root / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_ready(srv.url, proc, log_path, timeout_s=300)
        _upload(srv, RESTRICTED, acl_groups="finance")
        yield srv
    finally:
        stop_process(proc)


def _upload(server: Server, path: Path, *, acl_groups: str) -> None:
    """Upload one file through the REST API (the running server ingests it in process); wait until it is indexed.
    An admin uploads: a document limited to groups is invisible to an editor outside them."""
    http = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.key(role='admin')}"}, timeout=60
    )
    r = http.post(
        "/api/v1/documents", files=[("files", (path.name, path.read_bytes()))], data={"acl_groups": acl_groups}
    )
    assert r.status_code == 202, r.text
    doc_id = r.json()["documents"][0]["id"]
    deadline = time.monotonic() + 300
    while (doc := http.get(f"/api/v1/documents/{doc_id}").json())["status"] not in ("indexed", "failed"):
        assert time.monotonic() < deadline, doc
        time.sleep(0.5)
    assert doc["status"] == "indexed", doc


@asynccontextmanager
async def mcp_session(server: Server, key: str | None):
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """(is_error, the tool's JSON result or error body)."""
    result = await session.call_tool(tool, arguments)
    text = "".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error), json.loads(text)


async def test_tools_are_listed_and_answer_from_the_demo_kb_with_citations(server):
    key = server.key()
    async with mcp_session(server, key) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"search_knowledge_base", "ask_knowledge_base", "get_passage"}

        failed, answer = await call(
            session, "ask_knowledge_base", question="How long is the warranty on the Kestrel Thermo?"
        )
        assert not failed, answer
        assert "36 months" in answer["answer"] and answer["outcome"] == "answered"
        assert answer["citations"], answer
        cited = answer["citations"][0]
        assert "warranty" in cited["title"].lower() and cited["chunk_id"] and cited["section"]

        failed, passage = await call(session, "get_passage", chunk_id=cited["chunk_id"])
        assert not failed and passage["chunk_id"] == cited["chunk_id"] and passage["title"] == cited["title"]

        failed, found = await call(session, "search_knowledge_base", query="E31 error code", top_k=5)
        assert not failed and found["results"]
        top = found["results"][0]
        assert [r["rank"] for r in found["results"]] == list(range(1, len(found["results"]) + 1))
        assert "troubleshooting" in top["title"].lower() and top["chunk_id"] and top["snippet"]

        failed, err = await call(session, "search_knowledge_base", query="", top_k=5)
        assert failed and err["error"]["code"] == "validation_error"
        failed, err = await call(session, "get_passage", chunk_id="no-such-chunk")
        assert failed and err["error"]["code"] == "not_found"


async def test_ask_is_audited_and_kept_in_the_conversation_like_rest(server):
    admin = server.key(role="admin")
    async with mcp_session(server, admin) as session:
        failed, answer = await call(
            session, "ask_knowledge_base", question="How long is the warranty on the Kestrel Thermo?"
        )
    assert not failed
    h = {"Authorization": f"Bearer {admin}"}
    conv = httpx.get(f"{server.url}/api/v1/conversations/{answer['conversation_id']}", headers=h, timeout=30)
    assert conv.status_code == 200, conv.text
    assert [m["role"] for m in conv.json()["messages"]] == ["user", "assistant"]
    audit = httpx.get(f"{server.url}/api/v1/audit", params={"action": "ask"}, headers=h, timeout=30).json()
    assert any(e["target"] == answer["conversation_id"] for e in audit["events"])


@pytest.mark.parametrize("key", [None, "not-a-key", "kbqa_00000000000000000000000000000000"])
async def test_refused_without_a_valid_key(server, key):
    # The SDK's client cannot even initialize: the endpoint answers 401 before the MCP layer sees the request.
    with pytest.raises(BaseExceptionGroup) as info:
        async with mcp_session(server, key):
            pass
    assert info.value.subgroup(lambda e: isinstance(e, MCPError)) is not None, info.value
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    headers["Accept"] = "application/json, text/event-stream"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    r = httpx.post(f"{server.url}/mcp", json=body, headers=headers, timeout=30)
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
    assert r.headers["www-authenticate"] == "Bearer"


async def test_tenants_and_acl_groups_are_kept_apart(server):
    own, other, finance = server.key(), server.key(tenant="globex", role="admin"), server.key(groups="finance")
    question = "How long is the warranty on the Kestrel Thermo?"
    async with mcp_session(server, own) as session:
        _, found = await call(session, "search_knowledge_base", query="warranty Kestrel Thermo months")
        chunk_id = found["results"][0]["chunk_id"]
        _, billing = await call(session, "search_knowledge_base", query="billing invoice refund payment", top_k=50)
        assert all("billing" not in r["title"].lower() for r in billing["results"])
    async with mcp_session(server, finance) as session:
        _, billing = await call(session, "search_knowledge_base", query="billing invoice refund payment", top_k=50)
        assert any("billing" in r["title"].lower() for r in billing["results"])
    async with mcp_session(server, other) as session:
        failed, found = await call(session, "search_knowledge_base", query="warranty Kestrel Thermo months")
        assert not failed and found["results"] == []
        failed, err = await call(session, "get_passage", chunk_id=chunk_id)
        assert failed and err["error"]["code"] == "not_found"
        failed, answer = await call(session, "ask_knowledge_base", question=question)
        assert not failed and "36 months" not in answer["answer"]
        assert answer["outcome"] == "not_found" and answer["citations"] == [] and answer["sources"] == []


async def test_tool_calls_count_against_the_request_quota(server):
    key = server.key()
    codes = []
    async with mcp_session(server, key) as session:
        for _ in range(REQUESTS_PER_MINUTE * 4):  # the bucket refills while we call: allow for a slow machine
            failed, result = await call(session, "get_passage", chunk_id="no-such-chunk")
            assert failed
            codes.append(result["error"]["code"])
            if result["error"]["code"] != "not_found":
                break
    assert codes[-1] == "rate_limited" and len(codes) - 1 >= REQUESTS_PER_MINUTE
    r = httpx.get(f"{server.url}/api/v1/chunks/x", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"

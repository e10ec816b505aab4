"""Against a real running server over HTTP: upload → indexed → ask with citations; tenant isolation; JSON errors."""

from __future__ import annotations

import io
import time
import zipfile

import httpx
import pytest

from tests.sse import parse_sse

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DOC = b"""# Orion Lamp Care

## Bulb replacement

The Orion lamp uses a 7 W G9 bulb. Replace the bulb every 18 months.

## Cleaning

Wipe the Orion shade with a dry microfibre cloth.
"""


def _wait_indexed(client: httpx.Client, doc_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = client.get(f"/api/v1/documents/{doc_id}").json()
        if doc["status"] in ("indexed", "failed"):
            return doc
        time.sleep(0.5)
    raise AssertionError(f"document stuck: {doc}")


def test_upload_ask_and_tenant_isolation(server):
    key_a = server.create_key(tenant="acme", role="editor")
    key_b = server.create_key(tenant="globex", role="admin")
    a = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key_a}"}, timeout=120)
    b = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key_b}"}, timeout=120)

    r = a.post(
        "/api/v1/documents",
        files=[("files", ("orion.md", DOC, "text/markdown")), ("files", ("empty.txt", b"", "text/plain"))],
    )
    assert r.status_code == 202, r.text
    docs = r.json()["documents"]
    good = _wait_indexed(a, docs[0]["id"])
    bad = _wait_indexed(a, docs[1]["id"])
    assert good["status"] == "indexed" and good["chunk_count"] >= 1
    assert [s["name"] for s in good["stages"]] == ["parsing", "chunking", "embedding", "indexing"]
    assert bad["status"] == "failed" and bad["failure_reason"]

    with a.stream("POST", "/api/v1/ask", json={"question": "How often should the Orion bulb be replaced?"}) as resp:
        events = parse_sse("".join(resp.iter_text()))
    answer = "".join(d["text"] for t, d in events if t == "token")
    assert "18 months" in answer and "[1]" in answer
    sources = next(d for t, d in events if t == "sources")["sources"]
    assert sources[0]["document_id"] == good["id"]
    chunk = a.get(f"/api/v1/chunks/{sources[0]['chunk_id']}").json()
    assert "18 months" in chunk["text"]

    # another tenant sees nothing of it, by any route
    assert b.get(f"/api/v1/documents/{good['id']}").status_code == 404
    assert b.get(f"/api/v1/chunks/{sources[0]['chunk_id']}").status_code == 404
    assert b.delete(f"/api/v1/documents/{good['id']}").status_code == 404
    assert b.get("/api/v1/search", params={"q": "Orion lamp bulb"}).json()["results"] == []
    with b.stream("POST", "/api/v1/ask", json={"question": "How often should the Orion bulb be replaced?"}) as resp:
        b_events = parse_sse("".join(resp.iter_text()))
    assert "18 months" not in "".join(d["text"] for t, d in b_events if t == "token")
    assert all(s["document_id"] != good["id"] for s in next(d for t, d in b_events if t == "sources")["sources"])


def test_errors_are_json_over_the_wire(server):
    key = server.create_key(tenant="acme", role="agent")
    c = httpx.Client(base_url=server.url, timeout=30)
    r = c.post("/api/v1/ask", json={"question": "x"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
    r = c.post("/api/v1/documents", headers={"Authorization": f"Bearer {key}"}, files=[("files", ("a.md", b"x"))])
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = c.get("/api/v1/documents/does-not-exist", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def _prepended_zip_bomb() -> bytes:
    """64 MB of zeros in a DOCX-shaped ZIP (about 1000:1), with junk bytes in front of the ZIP's first header."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as member:
            for _ in range(64):
                member.write(b"\0" * (1024 * 1024))
    return b"MZ junk before the archive " * 40 + buf.getvalue()


def test_bulk_actions_and_all_or_nothing_uploads_over_the_wire(server):
    admin = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.create_key(tenant='bulk', role='admin')}"},
        timeout=120,
    )
    editor = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.create_key(tenant='bulk', role='editor')}"},
        timeout=120,
    )
    rival = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.create_key(tenant='rival', role='admin')}"},
        timeout=120,
    )
    # a request whose second file is a bomb with bytes prepended stores nothing, not even its first file
    r = editor.post(
        "/api/v1/documents",
        files=[
            ("files", ("atomic-first.md", b"# First\n\nkept only with its batch", "text/markdown")),
            ("files", ("bomb.docx", _prepended_zip_bomb(), "application/octet-stream")),
        ],
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", r.text
    assert editor.get("/api/v1/documents", params={"q": "atomic-first"}).json()["total"] == 0

    mine = [
        d["id"]
        for d in editor.post(
            "/api/v1/documents",
            files=[("files", (f"bulk-{i}.md", f"# Bulk {i}\n\nbody {i}".encode(), "text/markdown")) for i in range(3)],
        ).json()["documents"]
    ]
    hidden = admin.post(
        "/api/v1/documents",
        files=[("files", ("hr-only.md", b"# HR\n\nsalaries", "text/markdown"))],
        data={"acl_groups": "hr"},
    ).json()["documents"][0]["id"]
    theirs = rival.post(
        "/api/v1/documents", files=[("files", ("theirs.md", b"# Theirs\n\nrival text", "text/markdown"))]
    ).json()["documents"][0]["id"]
    for doc_id in (*mine, hidden, theirs):
        _wait_indexed(rival if doc_id == theirs else admin, doc_id)

    counts = editor.get("/api/v1/documents").json()["status_counts"]
    assert counts["indexed"] == 3  # the hr document is not counted for an editor outside the group
    assert admin.get("/api/v1/documents").json()["status_counts"]["indexed"] == 4

    r = editor.post("/api/v1/documents/bulk-reindex", json={"ids": [mine[0], hidden, theirs]})
    assert r.status_code == 200, r.text
    assert [x["result"] for x in r.json()["results"]] == ["done", "not_found", "not_found"]
    _wait_indexed(editor, mine[0])

    r = editor.post("/api/v1/documents/bulk-delete", json={"ids": [*mine, hidden, theirs]})
    assert r.status_code == 200, r.text
    assert [x["result"] for x in r.json()["results"]] == ["done"] * 3 + ["not_found"] * 2
    assert r.json()["results"][3] == {**r.json()["results"][4], "id": hidden}
    assert editor.get("/api/v1/documents").json()["total"] == 0
    assert admin.get(f"/api/v1/documents/{hidden}").status_code == 200
    assert rival.get(f"/api/v1/documents/{theirs}").status_code == 200
    r = editor.post("/api/v1/documents/bulk-delete", json={"ids": []})
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error"

// FakeApi: an in-memory stand-in for the kbqa HTTP API (contract v1) that also serves the built web app.
// For exercising browser.mjs and the frontend without the Python stack; not a reference implementation.
//   node tests/e2e/fake-api.mjs            (PORT=4173, DIST=frontend/dist, FAKE_API_KEY=kbqa_fake_admin)
import { randomUUID } from "node:crypto";
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const DIST = resolve(process.env.DIST ?? join(here, "../../frontend/dist"));
const PORT = Number(process.env.PORT ?? 4173);
const API_KEY = process.env.FAKE_API_KEY ?? "kbqa_fake_admin";
const STAGES = ["parsing", "chunking", "embedding", "indexing"];
const STAGE_MS = 300;

const sessions = new Map(); // cookie -> csrf
const docs = new Map();
const chunks = new Map();
const conversations = new Map();
const feedback = [];
const keys = [{ id: "k1", name: "fake-admin", role: "admin", prefix: "kbqa_fak", created_at: new Date().toISOString(), last_used_at: null, revoked: false }];

const send = (res, status, body, headers = {}) => {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(body === undefined ? "" : JSON.stringify(body));
};
const fail = (res, status, code, message) => send(res, status, { error: { code, message } });

async function readBody(req) {
  const parts = [];
  for await (const c of req) parts.push(c);
  return Buffer.concat(parts);
}

function parseMultipart(buf, contentType) {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType ?? "");
  if (!boundary) return [];
  const sep = `--${boundary[1] ?? boundary[2]}`;
  return buf
    .toString("latin1")
    .split(sep)
    .slice(1, -1)
    .map((part) => {
      const at = part.indexOf("\r\n\r\n");
      const head = part.slice(0, at);
      const name = /name="([^"]*)"/.exec(head)?.[1];
      const filename = /filename="([^"]*)"/.exec(head)?.[1];
      const value = Buffer.from(part.slice(at + 4, -2), "latin1");
      return { name, filename, value };
    });
}

function docView(d, withStages = false) {
  const elapsed = Date.now() - d.startedAt;
  const done = Math.min(STAGES.length, Math.floor(elapsed / STAGE_MS));
  const failing = d.failOnce && done >= 1;
  const status = failing ? "failed" : done >= STAGES.length ? "indexed" : done === 0 && elapsed < 100 ? "queued" : STAGES[done];
  const out = {
    id: d.id, title: d.title, filename: d.filename, doc_type: "md", status, version: d.version,
    chunk_count: status === "indexed" ? 1 : 0, failure_reason: failing ? "fake parser failure" : null,
    updated_at: new Date(d.startedAt).toISOString(), size_bytes: d.size,
  };
  if (withStages) {
    out.stages = STAGES.slice(0, Math.min(done + 1, STAGES.length)).map((name, i) => ({
      name, status: i < done ? "done" : failing ? "failed" : "running", progress: i < done ? 1 : (elapsed % STAGE_MS) / STAGE_MS,
      started_at: new Date(d.startedAt + i * STAGE_MS).toISOString(),
      finished_at: i < done ? new Date(d.startedAt + (i + 1) * STAGE_MS).toISOString() : null,
      duration_ms: i < done ? STAGE_MS : null,
    }));
  }
  return out;
}

function upload(buf, req, res) {
  const files = parseMultipart(buf, req.headers["content-type"]).filter((p) => p.name === "files" && p.filename);
  if (files.length === 0) return fail(res, 422, "validation_error", "no files");
  const out = files.map((f) => {
    const text = f.value.toString("utf8");
    const id = randomUUID();
    const title = /^# (.+)$/m.exec(text)?.[1] ?? f.filename;
    const section = /^## (.+)$/m.exec(text)?.[1];
    docs.set(id, { id, filename: f.filename, title, version: 1, size: f.value.length, startedAt: Date.now(), failOnce: f.filename.includes("fail") });
    chunks.set(`${id}-c1`, { chunk_id: `${id}-c1`, document_id: id, title, section_path: section ? [title, section] : [title], page_start: null, page_end: null, text });
    return { id, filename: f.filename, status: "queued", duplicate: false };
  });
  send(res, 202, { documents: out });
}

async function ask(body, res) {
  const { question, conversation_id } = JSON.parse(body.toString() || "{}");
  const convId = conversation_id ?? randomUUID();
  const conv = conversations.get(convId) ?? { id: convId, title: question.slice(0, 60), messages: [] };
  conversations.set(convId, conv);
  const messageId = randomUUID();
  const chunk = [...chunks.values()].at(-1);
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  const pause = (ms) => new Promise((r) => setTimeout(r, ms));
  ev("meta", { request_id: randomUUID(), conversation_id: convId, message_id: messageId, versions: { chunker: "fake", embedder: "fake", prompt_template: "fake", model: "fake" } });
  const citations = [];
  let answer;
  if (!chunk) {
    answer = "I could not find this in the knowledge base.";
  } else {
    ev("sources", { sources: [{ n: 1, ...chunk, score: 0.9 }] });
    const sentence = chunk.text.split("\n").find((l) => l.trim() && !l.startsWith("#"))?.trim() ?? chunk.title;
    answer = `${sentence} [1]`;
    citations.push({ n: 1, chunk_id: chunk.chunk_id, document_id: chunk.document_id, title: chunk.title, section: chunk.section_path.at(-1), page_start: null, page_end: null, sentence, supported: true });
  }
  res.write(": ping\n\n");
  for (const piece of answer.match(/.{1,12}/gs)) {
    ev("token", { text: piece });
    await pause(30);
  }
  if (citations.length) ev("citations", { citations });
  ev("done", { usage: { prompt_tokens: 100, completion_tokens: 20 }, timings_ms: { total: 200 }, refused: !chunk, degraded: false, answer });
  res.end();
  const now = new Date().toISOString();
  conv.messages.push({ id: randomUUID(), role: "user", content: question, created_at: now });
  conv.messages.push({ id: messageId, role: "assistant", content: answer, citations, created_at: now });
  conv.updated_at = now;
}

function cookieOf(req) {
  return /(?:^|;\s*)kbqa_session=([^;]+)/.exec(req.headers.cookie ?? "")?.[1];
}

async function api(req, res, path) {
  const method = req.method;
  const body = method === "GET" ? Buffer.alloc(0) : await readBody(req);
  if (method === "POST" && path === "/auth/session") {
    if (JSON.parse(body.toString() || "{}").api_key !== API_KEY) return fail(res, 401, "unauthorized", "invalid API key");
    const cookie = randomUUID();
    const csrf = randomUUID();
    sessions.set(cookie, csrf);
    return send(res, 200, { csrf_token: csrf, role: "admin", tenant: "default", key_name: "fake-admin" }, { "Set-Cookie": `kbqa_session=${cookie}; HttpOnly; SameSite=Strict; Path=/` });
  }
  const cookie = cookieOf(req);
  if (!cookie || !sessions.has(cookie)) return fail(res, 401, "unauthorized", "not signed in");
  if (method !== "GET" && req.headers["x-csrf-token"] !== sessions.get(cookie)) return fail(res, 403, "forbidden", "bad CSRF token");
  const csrf = sessions.get(cookie);
  let m;
  if (path === "/auth/me") return send(res, 200, { csrf_token: csrf, role: "admin", tenant: "default", key_name: "fake-admin" });
  if (method === "DELETE" && path === "/auth/session") return sessions.delete(cookie), send(res, 204);
  if (method === "POST" && path === "/ask") return ask(body, res);
  if ((m = /^\/chunks\/(.+)$/.exec(path))) return chunks.has(m[1]) ? send(res, 200, chunks.get(m[1])) : fail(res, 404, "not_found", "no chunk");
  if (method === "POST" && path === "/feedback") return feedback.push(JSON.parse(body.toString())), send(res, 201, { id: randomUUID() });
  if (path === "/conversations") return send(res, 200, { conversations: [...conversations.values()].map(({ id, title, updated_at }) => ({ id, title, updated_at })) });
  if ((m = /^\/conversations\/(.+)$/.exec(path))) return conversations.has(m[1]) ? send(res, 200, conversations.get(m[1])) : fail(res, 404, "not_found", "no conversation");
  if (method === "POST" && path === "/documents") return upload(body, req, res);
  if (method === "GET" && path === "/documents") {
    const q = new URL(req.url, "http://x").searchParams;
    const list = [...docs.values()].map((d) => docView(d)).filter((d) => (!q.get("status") || d.status === q.get("status")) && (!q.get("q") || d.title.toLowerCase().includes(q.get("q").toLowerCase())));
    return send(res, 200, { documents: list });
  }
  if ((m = /^\/documents\/([^/]+)(\/reindex)?$/.exec(path))) {
    const d = docs.get(m[1]);
    if (!d) return fail(res, 404, "not_found", "no document");
    if (method === "GET" && !m[2]) return send(res, 200, docView(d, true));
    if (method === "DELETE" && !m[2]) return docs.delete(d.id), send(res, 204);
    if (method === "POST" && m[2]) return Object.assign(d, { startedAt: Date.now(), failOnce: false, version: d.version + 1 }), send(res, 202, { id: d.id, status: "queued" });
  }
  if (path === "/keys" && method === "GET") return send(res, 200, { keys });
  if (path === "/keys" && method === "POST") {
    const { name, role } = JSON.parse(body.toString());
    const k = { id: randomUUID(), name, role, prefix: "kbqa_new", created_at: new Date().toISOString(), last_used_at: null, revoked: false };
    keys.push(k);
    return send(res, 201, { ...k, key: `kbqa_new_${randomUUID()}` });
  }
  if ((m = /^\/keys\/(.+)$/.exec(path)) && method === "DELETE") return keys.forEach((k) => k.id === m[1] && (k.revoked = true)), send(res, 204);
  if (path === "/usage") return send(res, 200, { usage: [{ key_id: "k1", key_name: "fake-admin", day: new Date().toISOString().slice(0, 10), requests: 3, prompt_tokens: 300, completion_tokens: 60 }] });
  return fail(res, 404, "not_found", `no route ${method} ${path}`);
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".json": "application/json" };

function serveStatic(req, res) {
  const rel = normalize(decodeURIComponent(new URL(req.url, "http://x").pathname)).replace(/^([/\\])+/, "");
  let file = join(DIST, rel);
  if (!file.startsWith(DIST) || !existsSync(file) || statSync(file).isDirectory()) file = join(DIST, "index.html");
  res.writeHead(200, { "Content-Type": TYPES[extname(file)] ?? "application/octet-stream" });
  createReadStream(file).pipe(res);
}

createServer((req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  if (path.startsWith("/api/v1/")) {
    api(req, res, path.slice("/api/v1".length)).catch((err) => fail(res, 500, "internal", String(err)));
  } else serveStatic(req, res);
}).listen(PORT, "127.0.0.1", () => console.log(`FakeApi on http://127.0.0.1:${PORT} (key ${API_KEY}, dist ${DIST})`));

// FakeApi: an in-memory stand-in for the kbqa HTTP API (contract v1) that also serves the built web app.
// For exercising browser.mjs and the frontend without the Python stack; not a reference implementation.
//   node tests/e2e/fake-api.mjs            (PORT=4173, DIST=frontend/dist, FAKE_API_KEY=kbqa_fake_admin)
// Users (password "fake password 123"): admin@fake.example (admin, tenant default) and agent@other.example
// (agent, tenant other, sees none of the default tenant's documents or conversations).
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

const PASSWORD = process.env.FAKE_PASSWORD ?? "fake password 123";
const MIN_PASSWORD = 10;
const MAX_FAILED_LOGINS = 5;

const sessions = new Map(); // cookie -> { csrf, principal }
const docs = new Map(); // each with a tenant
const chunks = new Map();
const conversations = new Map();
const feedback = [];
const now = () => new Date().toISOString();
const keys = [{ id: "k1", name: "fake-admin", role: "admin", prefix: "kbqa_fak", created_at: now(), last_used_at: null, revoked: false, tenant: "default" }];
const users = [
  { id: "u1", email: "admin@fake.example", name: "Fake Admin", role: "admin", acl_groups: [], created_at: now(), last_login_at: null, disabled: false, tenant: "default", password: PASSWORD },
  { id: "u2", email: "agent@other.example", name: "Other Agent", role: "agent", acl_groups: [], created_at: now(), last_login_at: null, disabled: false, tenant: "other", password: PASSWORD },
];
const failedLogins = new Map(); // email -> count
const audit = []; // newest last
const usage = new Map(); // `${kind}:${id}:${day}` -> row

function record(principal, action, target, detail = {}) {
  audit.push({
    id: audit.length + 1, created_at: now(), tenant: principal?.tenant ?? "default",
    actor_kind: principal?.kind ?? "system", actor_id: principal?.id ?? null, actor_name: principal?.name ?? "anonymous",
    action, target, detail,
  });
}

const userView = ({ password: _p, tenant: _t, ...u }) => u;
const sessionView = (s) => ({ csrf_token: s.csrf, role: s.principal.role, tenant: s.principal.tenant, kind: s.principal.kind, name: s.principal.name, key_name: s.principal.name });

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
    chunk_count: status === "indexed" ? [...chunks.values()].filter((c) => c.document_id === d.id).length : 0, failure_reason: failing ? "fake parser failure" : null,
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

function upload(principal, buf, req, res) {
  const files = parseMultipart(buf, req.headers["content-type"]).filter((p) => p.name === "files" && p.filename);
  if (files.length === 0) return fail(res, 422, "validation_error", "no files");
  const out = files.map((f) => {
    const text = f.value.toString("utf8");
    const id = randomUUID();
    const title = /^# (.+)$/m.exec(text)?.[1] ?? f.filename;
    docs.set(id, { id, tenant: principal.tenant, filename: f.filename, title, version: 1, size: f.value.length, startedAt: Date.now(), failOnce: f.filename.includes("fail") });
    record(principal, "document.upload", id, { filename: f.filename, bytes: f.value.length });
    // one chunk per "## " section, its text headed by the heading path like the real chunker's
    const sections = text.split(/^## /m).slice(1);
    (sections.length ? sections : [text]).forEach((part, i) => {
      const heading = sections.length ? part.split("\n")[0].trim() : null;
      const section_path = heading ? [title, heading] : [title];
      const body = heading ? part.slice(part.indexOf("\n") + 1).trim() : text;
      const chunk_id = `${id}-c${i + 1}`;
      chunks.set(chunk_id, { chunk_id, document_id: id, title, section_path, page_start: null, page_end: null, text: `${section_path.join(" > ")}\n${body}` });
    });
    return { id, filename: f.filename, status: "queued", duplicate: false };
  });
  send(res, 202, { documents: out });
}

async function ask(principal, body, res) {
  const { question, conversation_id } = JSON.parse(body.toString() || "{}");
  const convId = conversation_id ?? randomUUID();
  const conv = conversations.get(convId) ?? { id: convId, tenant: principal.tenant, title: question.slice(0, 60), messages: [] };
  conversations.set(convId, conv);
  const messageId = randomUUID();
  // the tenant's passage sharing the most words with the question (the latest on a tie)
  const words = (t) => new Set(t.toLowerCase().match(/[a-z0-9]{3,}/g) ?? []);
  const asked = words(question);
  const overlap = (c) => [...words(c.text)].filter((w) => asked.has(w)).length;
  const chunk = [...chunks.values()]
    .filter((c) => docs.get(c.document_id)?.tenant === principal.tenant)
    .reduce((best, c) => (!best || overlap(c) >= overlap(best) ? c : best), null);
  record(principal, "ask", convId, { question: question.slice(0, 200) });
  const day = now().slice(0, 10);
  const row = usage.get(`${principal.kind}:${principal.id}:${day}`) ?? { actor_kind: principal.kind, actor_id: principal.id, actor_name: principal.name, day, requests: 0, prompt_tokens: 0, completion_tokens: 0, tenant: principal.tenant };
  usage.set(`${principal.kind}:${principal.id}:${day}`, Object.assign(row, { requests: row.requests + 1, prompt_tokens: row.prompt_tokens + 100, completion_tokens: row.completion_tokens + 20 }));
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  const pause = (ms) => new Promise((r) => setTimeout(r, ms));
  ev("meta", { request_id: randomUUID(), conversation_id: convId, message_id: messageId, versions: { chunker: "fake", embedder: "fake", prompt_template: "fake", model: "fake" } });
  const citations = [];
  let answer;
  let unit = null;
  if (!chunk) {
    answer = "I could not find this in the knowledge base.";
  } else {
    ev("sources", { sources: [{ n: 1, ...chunk, score: 0.9 }] });
    // like the extractive composer: a numbered list whole for a how-to question, else the first sentence
    const lines = chunk.text.split("\n").slice(1).map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
    const steps = lines.filter((l) => /^\d+[.)]\s/.test(l));
    const howto = /\b(how|what should|check|steps?|keeps?|won'?t)\b/i.test(question) && steps.length > 0;
    const quoted = howto ? steps : [lines[0] ?? chunk.title];
    const label = chunk.section_path.length > 1 ? `${chunk.title} › ${chunk.section_path.slice(1).join(" › ")}` : chunk.title;
    answer = `From *${label}*:\n${quoted.map((l) => `${l} [1]`).join("\n")}`;
    for (const sentence of quoted) {
      citations.push({ n: 1, chunk_id: chunk.chunk_id, document_id: chunk.document_id, title: chunk.title, section: chunk.section_path.join(" > "), page_start: null, page_end: null, sentence, supported: true });
    }
    unit = { label, document_id: chunk.document_id, section_path: chunk.section_path, sources: [1] };
  }
  res.write(": ping\n\n");
  for (const piece of answer.match(/.{1,12}/gs)) {
    ev("token", { text: piece });
    await pause(30);
  }
  if (citations.length) ev("citations", { citations });
  ev("done", {
    usage: { prompt_tokens: 100, completion_tokens: 20 }, timings_ms: { total: 200 }, refused: !chunk, degraded: false, answer,
    outcome: chunk ? "answered" : "not_found", missing: [], unit, mode: "excerpt",
  });
  res.end();
  const at = now();
  conv.messages.push({ id: randomUUID(), role: "user", content: question, created_at: at });
  conv.messages.push({ id: messageId, role: "assistant", content: answer, citations, created_at: at });
  conv.updated_at = at;
}

function cookieOf(req) {
  return /(?:^|;\s*)kbqa_session=([^;]+)/.exec(req.headers.cookie ?? "")?.[1];
}

function openSession(res, principal) {
  const cookie = randomUUID();
  const session = { csrf: randomUUID(), principal };
  sessions.set(cookie, session);
  return send(res, 200, sessionView(session), { "Set-Cookie": `kbqa_session=${cookie}; HttpOnly; SameSite=Strict; Path=/` });
}

function login(body, res) {
  const creds = JSON.parse(body.toString() || "{}");
  if (creds.api_key !== undefined) {
    if (creds.api_key !== API_KEY) return record(null, "session.login_failed", "api_key", {}), fail(res, 401, "unauthenticated", "invalid or revoked API key");
    const principal = { kind: "key", id: "k1", name: "fake-admin", role: "admin", tenant: "default" };
    record(principal, "session.login", "k1", { method: "api_key" });
    return openSession(res, principal);
  }
  const email = String(creds.email ?? "").trim().toLowerCase();
  if ((failedLogins.get(email) ?? 0) >= MAX_FAILED_LOGINS) {
    res.setHeader("Retry-After", "60");
    return fail(res, 429, "rate_limited", "too many failed sign-in attempts");
  }
  const user = users.find((u) => u.email === email);
  if (!user || user.disabled || user.password !== creds.password) {
    failedLogins.set(email, (failedLogins.get(email) ?? 0) + 1);
    record(null, "session.login_failed", email, {});
    return fail(res, 401, "unauthenticated", "invalid email or password");
  }
  failedLogins.delete(email);
  user.last_login_at = now();
  const principal = { kind: "user", id: user.id, name: user.name, role: user.role, tenant: user.tenant };
  record(principal, "session.login", user.id, { method: "password" });
  return openSession(res, principal);
}

function usersApi(principal, method, path, body, res) {
  const mine = users.filter((u) => u.tenant === principal.tenant);
  if (method === "GET" && path === "/users") return send(res, 200, { users: mine.map(userView) });
  const input = JSON.parse(body.toString() || "{}");
  if (input.password !== undefined && String(input.password).length < MIN_PASSWORD) return fail(res, 422, "validation_error", `password: at least ${MIN_PASSWORD} characters`);
  if (method === "POST" && path === "/users") {
    if (!/^[^@\s]+@[^@\s]+$/.test(input.email ?? "")) return fail(res, 422, "validation_error", "email: not a valid address");
    const email = input.email.trim().toLowerCase();
    if (users.some((u) => u.email === email)) return fail(res, 409, "conflict", `a user with email ${email} already exists`);
    const user = { id: randomUUID(), email, name: input.name, role: input.role, acl_groups: input.acl_groups ?? [], created_at: now(), last_login_at: null, disabled: false, tenant: principal.tenant, password: input.password };
    users.push(user);
    record(principal, "user.create", user.id, { email, role: user.role });
    return send(res, 201, userView(user));
  }
  const m = /^\/users\/([^/]+)$/.exec(path);
  const user = m && mine.find((u) => u.id === m[1]);
  if (!user || method !== "PATCH") return fail(res, 404, "not_found", "no such user");
  if (user.id === principal.id && ((input.role && input.role !== "admin") || input.disabled)) return fail(res, 409, "conflict", "an admin cannot demote or disable themselves");
  for (const f of ["name", "role", "acl_groups", "disabled", "password"]) if (input[f] !== undefined) user[f] = input[f];
  record(principal, "user.update", user.id, Object.fromEntries(Object.keys(input).map((k) => [k, k === "password" ? "(changed)" : input[k]])));
  return send(res, 200, userView(user));
}

function auditApi(principal, url, res) {
  const q = new URL(url, "http://x").searchParams;
  const limit = Math.min(200, Number(q.get("limit") ?? 50));
  const before = q.get("before") ? Number(q.get("before")) : Infinity;
  const matching = audit
    .filter((e) => e.tenant === principal.tenant && e.id < before && e.action.startsWith(q.get("action") ?? "") && (!q.get("actor") || e.actor_id === q.get("actor")))
    .reverse();
  const page = matching.slice(0, limit).map(({ tenant: _t, ...e }) => e);
  return send(res, 200, { events: page, next_before: matching.length > limit ? page.at(-1).id : null });
}

async function api(req, res, path) {
  const method = req.method;
  const body = method === "GET" ? Buffer.alloc(0) : await readBody(req);
  if (method === "POST" && path === "/auth/session") return login(body, res);
  const cookie = cookieOf(req);
  const session = cookie && sessions.get(cookie);
  if (!session) return fail(res, 401, "unauthenticated", "not signed in");
  if (method !== "GET" && req.headers["x-csrf-token"] !== session.csrf) return fail(res, 403, "forbidden", "bad CSRF token");
  const me = session.principal;
  const isAdmin = me.role === "admin";
  const ownDoc = (id) => (docs.get(id)?.tenant === me.tenant ? docs.get(id) : undefined);
  let m;
  if (path === "/auth/me") return send(res, 200, sessionView(session));
  if (method === "DELETE" && path === "/auth/session") return sessions.delete(cookie), send(res, 204);
  if (method === "POST" && path === "/auth/password") {
    const user = me.kind === "user" && users.find((u) => u.id === me.id);
    if (!user) return fail(res, 403, "forbidden", "only users have passwords");
    const { current_password, new_password } = JSON.parse(body.toString() || "{}");
    if (current_password !== user.password) return fail(res, 401, "unauthenticated", "the current password is wrong");
    if (String(new_password ?? "").length < MIN_PASSWORD) return fail(res, 422, "validation_error", `password must be at least ${MIN_PASSWORD} characters`);
    user.password = new_password;
    record(me, "user.password_change", user.id, {});
    // like the server: older sessions end, this browser gets a fresh one
    for (const [c, other] of sessions) if (other.principal.kind === "user" && other.principal.id === user.id) sessions.delete(c);
    return openSession(res, me);
  }
  if (method === "POST" && path === "/ask") return ask(me, body, res);
  if ((m = /^\/chunks\/(.+)$/.exec(path))) {
    const c = chunks.get(m[1]);
    return c && ownDoc(c.document_id) ? send(res, 200, c) : fail(res, 404, "not_found", "no chunk");
  }
  if (method === "POST" && path === "/feedback") return feedback.push(JSON.parse(body.toString())), send(res, 201, { id: randomUUID() });
  const myConversations = [...conversations.values()].filter((c) => c.tenant === me.tenant);
  if (path === "/conversations") return send(res, 200, { conversations: myConversations.map(({ id, title, updated_at }) => ({ id, title, updated_at })) });
  if ((m = /^\/conversations\/(.+)$/.exec(path))) {
    const c = myConversations.find((x) => x.id === m[1]);
    return c ? send(res, 200, { id: c.id, title: c.title, messages: c.messages }) : fail(res, 404, "not_found", "no conversation");
  }
  if (path.startsWith("/documents") && me.role === "agent") return fail(res, 403, "forbidden", "editor role required");
  if (method === "POST" && path === "/documents") return upload(me, body, req, res);
  if (method === "GET" && path === "/documents") {
    const q = new URL(req.url, "http://x").searchParams;
    const list = [...docs.values()].filter((d) => d.tenant === me.tenant).map((d) => docView(d)).filter((d) => (!q.get("status") || d.status === q.get("status")) && (!q.get("q") || d.title.toLowerCase().includes(q.get("q").toLowerCase())));
    return send(res, 200, { documents: list });
  }
  if ((m = /^\/documents\/([^/]+)(\/reindex)?$/.exec(path))) {
    const d = ownDoc(m[1]);
    if (!d) return fail(res, 404, "not_found", "no document");
    if (method === "GET" && !m[2]) return send(res, 200, docView(d, true));
    if (method === "DELETE" && !m[2]) return docs.delete(d.id), record(me, "document.delete", d.id, { filename: d.filename }), send(res, 204);
    if (method === "POST" && m[2]) return Object.assign(d, { startedAt: Date.now(), failOnce: false, version: d.version + 1 }), record(me, "document.reindex", d.id, {}), send(res, 202, { id: d.id, status: "queued" });
  }
  if (!isAdmin) return fail(res, 403, "forbidden", "admin role required");
  if (path === "/keys" && method === "GET") return send(res, 200, { keys: keys.filter((k) => k.tenant === me.tenant).map(({ tenant: _t, ...k }) => k) });
  if (path === "/keys" && method === "POST") {
    const { name, role } = JSON.parse(body.toString());
    const k = { id: randomUUID(), name, role, prefix: "kbqa_new", created_at: now(), last_used_at: null, revoked: false, tenant: me.tenant };
    keys.push(k);
    record(me, "key.create", k.id, { name, role });
    const { tenant: _t, ...view } = k;
    return send(res, 201, { ...view, key: `kbqa_new_${randomUUID()}` });
  }
  if ((m = /^\/keys\/(.+)$/.exec(path)) && method === "DELETE") return keys.forEach((k) => k.id === m[1] && k.tenant === me.tenant && (k.revoked = true)), record(me, "key.revoke", m[1], {}), send(res, 204);
  if (path === "/usage") return send(res, 200, { usage: [...usage.values()].filter((r) => r.tenant === me.tenant).map(({ tenant: _t, ...r }) => r) });
  if (path === "/users" || path.startsWith("/users/")) return usersApi(me, method, path, body, res);
  if (path === "/audit" && method === "GET") return auditApi(me, req.url, res);
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
}).listen(PORT, "127.0.0.1", () =>
  console.log(`FakeApi on http://127.0.0.1:${PORT} (key ${API_KEY}, admin@fake.example / ${PASSWORD}, dist ${DIST})`),
);

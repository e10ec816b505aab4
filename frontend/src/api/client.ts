// Tiny typed client for the kbqa API. Same origin; the session cookie travels automatically and every
// non-GET request carries the CSRF token received at login.
import { createSseParser } from "./sse";
import type {
  AnalyticsReport,
  ApiKey,
  AskEvent,
  AuditPage,
  BulkResult,
  Chunk,
  ChunkSection,
  Conversation,
  ConversationSummary,
  CreatedKey,
  DocSort,
  DocumentDetail,
  DocumentSummary,
  GapsReport,
  NewUser,
  RegressionRun,
  ReviewItem,
  ReviewStatus,
  ReviewUpdate,
  SectionHit,
  Role,
  Session,
  StatusCounts,
  UploadedDocument,
  UsageRow,
  User,
  UserPatch,
} from "./types";

export const API_BASE = "/api/v1";

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** Seconds from a Retry-After header (429), when the server sent one. */
  readonly retryAfterS: number | null;

  constructor(status: number, code: string, message: string, retryAfterS: number | null = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.retryAfterS = retryAfterS;
  }
}

let csrfToken: string | null = null;
let onUnauthorized: (() => void) | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Called when any request (other than the session probe) answers 401, e.g. an expired session. */
export function setUnauthorizedHandler(handler: (() => void) | null): void {
  onUnauthorized = handler;
}

// A 401 from these means "wrong credentials in this request", not "the session is gone".
const CREDENTIAL_PATHS = new Set(["/auth/me", "/auth/session", "/auth/password"]);

function noteFailure(status: number, path: string): void {
  if (status === 401 && !CREDENTIAL_PATHS.has(path)) {
    setHint(false);
    onUnauthorized?.();
  }
}

interface ErrorBody {
  error?: { code?: string; message?: string; details?: { errors?: { loc?: string[]; msg?: string }[] } };
}

/** "email: Value error, not an e-mail address" from one entry of a validation error's details. */
function describeFieldError(e: { loc?: string[]; msg?: string }): string {
  const where = (e.loc ?? []).filter((p) => p !== "body").join(".");
  return where ? `${where}: ${e.msg ?? "invalid"}` : (e.msg ?? "invalid");
}

/** Builds the ApiError for a failed response from its status and body text ({"error": {code, message}}). */
export function apiErrorFrom(status: number, statusText: string, bodyText: string, retryAfter: string | null): ApiError {
  let code = `http_${status}`;
  let message = statusText || `HTTP ${status}`;
  try {
    const body = JSON.parse(bodyText) as ErrorBody;
    if (body?.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      const fields = body.error.details?.errors;
      if (Array.isArray(fields) && fields.length) message += `: ${fields.map(describeFieldError).join("; ")}`;
    }
  } catch {
    // not JSON: keep the status text
  }
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : null;
  return new ApiError(status, code, message, seconds);
}

async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => "");
  return apiErrorFrom(res.status, res.statusText, text, res.headers.get("Retry-After"));
}

async function send(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (method !== "GET" && csrfToken) headers.set("X-CSRF-Token", csrfToken);
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers.set("Content-Type", "application/json");
    payload = JSON.stringify(body);
  }
  if (!headers.has("Accept")) headers.set("Accept", "application/json");
  const res = await fetch(API_BASE + path, { ...init, method, headers, body: payload, credentials: "same-origin" });
  if (!res.ok) {
    const err = await errorFrom(res);
    noteFailure(res.status, path);
    throw err;
  }
  return res;
}

async function json<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await send(method, path, body);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

// --- auth ---------------------------------------------------------------------------------------------------------
// A non-secret hint that this browser signed in before, so a fresh visit shows the login screen without
// probing /auth/me (which would answer 401 and log a console error).
const SESSION_HINT = "kbqa.signedIn";

function setHint(on: boolean): void {
  try {
    if (on) localStorage.setItem(SESSION_HINT, "1");
    else localStorage.removeItem(SESSION_HINT);
  } catch {
    // storage unavailable: always probe
  }
}

function hasHint(): boolean {
  try {
    return localStorage.getItem(SESSION_HINT) !== null;
  } catch {
    return true;
  }
}

async function openSession(
  credentials: { api_key: string } | { email: string; password: string; tenant?: string },
): Promise<Session> {
  const session = await json<Session>("POST", "/auth/session", credentials);
  setCsrfToken(session.csrf_token);
  setHint(true);
  return session;
}

/** Signs in with an API key (tools, service accounts). */
export const login = (apiKey: string) => openSession({ api_key: apiKey });

/** Signs in as a user with email and password; `tenant` picks the account when the address has one in several. */
export const loginWithPassword = (email: string, password: string, tenant?: string) =>
  openSession(tenant ? { email, password, tenant } : { email, password });

/** The login methods the server offers (`sso_login_url` when single sign-on is configured). */
export interface LoginMethods {
  password: boolean;
  sso: boolean;
  sso_login_url: string | null;
}

/** What /auth/methods says; an older server without it offers password login only. */
export async function loginMethods(): Promise<LoginMethods> {
  try {
    return await json<LoginMethods>("GET", "/auth/methods");
  } catch {
    return { password: true, sso: false, sso_login_url: null };
  }
}

/** Leaves for the single-sign-on provider; the server sends the browser back with a session cookie. */
export function startSso(loginUrl: string, go: (url: string) => void = (url) => window.location.assign(url)): void {
  setHint(true); // so the page the provider returns to asks /auth/me for the new session
  go(loginUrl);
}

/** Changes the signed-in user's password (users only, not API keys). */
export async function changePassword(currentPassword: string, newPassword: string): Promise<void> {
  const fresh = await json<Session | undefined>("POST", "/auth/password", {
    current_password: currentPassword,
    new_password: newPassword,
  });
  // The server ends older sessions and may answer with a fresh one for this browser: keep its CSRF token.
  if (fresh?.csrf_token) setCsrfToken(fresh.csrf_token);
}

/** The name to show for a session (older servers send only key_name). */
export const sessionName = (s: Session) => s.name || s.key_name;

/** The current session, or null when there is none (401). */
export async function currentSession(): Promise<Session | null> {
  if (!hasHint()) return null;
  try {
    const session = await json<Session>("GET", "/auth/me");
    setCsrfToken(session.csrf_token);
    return session;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setHint(false);
      return null;
    }
    throw err;
  }
}

export async function logout(): Promise<void> {
  try {
    await send("DELETE", "/auth/session");
  } finally {
    setCsrfToken(null);
    setHint(false);
  }
}

// --- ask (POST + server-sent events) ------------------------------------------------------------------------------

export interface AskParams {
  question: string;
  conversation_id?: string;
  top_k?: number;
}

const ASK_EVENT_TYPES = new Set(["meta", "sources", "token", "citations", "degraded", "done", "error"]);

/**
 * Streams an answer. Calls `onEvent` for every known event in order; resolves when the stream ends.
 * Abort with `signal` (the Stop button): the promise then rejects with an AbortError.
 */
export async function ask(params: AskParams, onEvent: (event: AskEvent) => void, signal?: AbortSignal): Promise<void> {
  const res = await send("POST", "/ask", params, { signal, headers: { Accept: "text/event-stream" } });
  if (!res.body) throw new ApiError(res.status, "no_body", "The answer stream had no body");
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parser = createSseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const ev of parser.push(decoder.decode(value, { stream: true }))) {
        if (!ASK_EVENT_TYPES.has(ev.event)) continue;
        let data: unknown;
        try {
          data = JSON.parse(ev.data);
        } catch {
          throw new ApiError(res.status, "bad_event", `Malformed ${ev.event} event from the server`);
        }
        onEvent({ type: ev.event, data } as AskEvent);
      }
    }
    parser.finish();
  } finally {
    reader.releaseLock();
  }
}

// --- chat helpers -------------------------------------------------------------------------------------------------

export const getChunk = (chunkId: string) => json<Chunk>("GET", `/chunks/${encodeURIComponent(chunkId)}`);

/** The section a passage belongs to, with the passage's offsets in it. */
export const getChunkSection = (chunkId: string) =>
  json<ChunkSection>("GET", `/chunks/${encodeURIComponent(chunkId)}/section`);

/** Where the stored original of a document is served (inline; HTML and other text formats as plain text). */
export const originalUrl = (documentId: string) =>
  `${API_BASE}/documents/${encodeURIComponent(documentId)}/original`;

/** The bytes of a document's original (to render a PDF page in the browser). */
export async function getOriginal(documentId: string): Promise<ArrayBuffer> {
  const res = await send("GET", `/documents/${encodeURIComponent(documentId)}/original`, undefined, {
    headers: { Accept: "*/*" },
  });
  return res.arrayBuffer();
}

export const sendFeedback = (messageId: string, rating: "up" | "down", comment?: string) =>
  json<unknown>("POST", "/feedback", { message_id: messageId, rating, ...(comment ? { comment } : {}) });

export const listConversations = () =>
  json<{ conversations: ConversationSummary[] }>("GET", "/conversations").then((r) => r.conversations);

export const getConversation = (id: string) => json<Conversation>("GET", `/conversations/${encodeURIComponent(id)}`);

// --- documents ----------------------------------------------------------------------------------------------------

export interface UploadOptions {
  aclGroups?: string;
  tags?: string;
  /** Called as the request body goes out: bytes sent and the body's total size. */
  onProgress?: (loaded: number, total: number) => void;
  signal?: AbortSignal;
}

/**
 * Uploads files in one multipart request. Uses XMLHttpRequest rather than fetch because only XHR reports upload
 * progress; otherwise it behaves like `send`: same origin with cookies, CSRF header, JSON errors as ApiError.
 */
export function uploadDocuments(files: File[], opts: UploadOptions = {}): Promise<UploadedDocument[]> {
  const form = new FormData();
  for (const f of files) form.append("files", f, f.name);
  if (opts.aclGroups?.trim()) form.append("acl_groups", opts.aclGroups.trim());
  if (opts.tags?.trim()) form.append("tags", opts.tags.trim());
  const path = "/documents";
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", API_BASE + path);
    xhr.withCredentials = false; // same origin: the session cookie goes anyway
    xhr.setRequestHeader("Accept", "application/json");
    if (csrfToken) xhr.setRequestHeader("X-CSRF-Token", csrfToken);
    if (opts.onProgress) {
      const report = opts.onProgress;
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) report(e.loaded, e.total);
      };
    }
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          resolve((JSON.parse(xhr.responseText) as { documents: UploadedDocument[] }).documents);
        } catch {
          reject(new ApiError(xhr.status, "bad_response", "The server's answer to the upload was not JSON"));
        }
        return;
      }
      const err = apiErrorFrom(xhr.status, xhr.statusText, xhr.responseText, xhr.getResponseHeader("Retry-After"));
      noteFailure(xhr.status, path);
      reject(err);
    };
    xhr.onerror = () => reject(new ApiError(0, "network_error", "The upload failed: network error"));
    xhr.onabort = () => reject(new DOMException("Upload aborted", "AbortError"));
    if (opts.signal) {
      if (opts.signal.aborted) {
        reject(new DOMException("Upload aborted", "AbortError"));
        return;
      }
      opts.signal.addEventListener("abort", () => xhr.abort(), { once: true });
    }
    xhr.send(form);
  });
}

/** One page of the document list in the order asked for; `next_cursor` fetches the next page (null on the last one).
 * `status_counts` (null from older servers) counts the matches of every filter but the status, per status. */
export interface DocumentPage {
  documents: DocumentSummary[];
  total: number;
  next_cursor: string | null;
  status_counts: StatusCounts | null;
}

export interface DocumentFilters {
  status?: string;
  q?: string;
  sort?: DocSort;
  doc_type?: string;
  tag?: string;
  cursor?: string | null;
  limit?: number;
}

export function listDocuments(filters: DocumentFilters = {}): Promise<DocumentPage> {
  const qs = new URLSearchParams();
  if (filters.status) qs.set("status", filters.status);
  if (filters.q) qs.set("q", filters.q);
  if (filters.sort && filters.sort !== "newest") qs.set("sort", filters.sort);
  if (filters.doc_type) qs.set("doc_type", filters.doc_type);
  if (filters.tag) qs.set("tag", filters.tag);
  if (filters.cursor) qs.set("cursor", filters.cursor);
  if (filters.limit) qs.set("limit", String(filters.limit));
  const suffix = qs.toString() ? `?${qs}` : "";
  return json<Partial<DocumentPage> & { documents: DocumentSummary[] }>("GET", `/documents${suffix}`).then((r) => ({
    documents: r.documents,
    total: r.total ?? r.documents.length,
    next_cursor: r.next_cursor ?? null,
    status_counts: r.status_counts ?? null,
  }));
}

/** Most ids the server takes in one bulk request; more are sent in several. */
export const MAX_BULK_IDS = 500;

/** Deletes or reindexes many documents; the per-id results of every request, tallied together. */
export async function bulkDocuments(action: "delete" | "reindex", ids: string[]): Promise<BulkResult> {
  const all: BulkResult = { action, results: [], done: 0, not_found: 0, forbidden: 0, conflict: 0 };
  for (let i = 0; i < ids.length; i += MAX_BULK_IDS) {
    const r = await json<BulkResult>("POST", `/documents/bulk-${action}`, { ids: ids.slice(i, i + MAX_BULK_IDS) });
    all.results.push(...r.results);
    all.done += r.done;
    all.not_found += r.not_found;
    all.forbidden += r.forbidden;
    all.conflict += r.conflict;
  }
  return all;
}

export const getDocument = (id: string) => json<DocumentDetail>("GET", `/documents/${encodeURIComponent(id)}`);

export const deleteDocument = (id: string) => json<void>("DELETE", `/documents/${encodeURIComponent(id)}`);

export const reindexDocument = (id: string) =>
  json<unknown>("POST", `/documents/${encodeURIComponent(id)}/reindex`);

// --- admin --------------------------------------------------------------------------------------------------------

export const listKeys = () => json<{ keys: ApiKey[] }>("GET", "/keys").then((r) => r.keys);

export const createKey = (name: string, role: Role) => json<CreatedKey>("POST", "/keys", { name, role });

export const revokeKey = (id: string) => json<void>("DELETE", `/keys/${encodeURIComponent(id)}`);

export const getUsage = () => json<{ usage: UsageRow[] }>("GET", "/usage").then((r) => r.usage);

export const listUsers = () => json<{ users: User[] }>("GET", "/users").then((r) => r.users);

export const createUser = (user: NewUser) => json<User>("POST", "/users", user);

export const updateUser = (id: string, patch: UserPatch) =>
  json<User>("PATCH", `/users/${encodeURIComponent(id)}`, patch);

export interface AuditQuery {
  /** Action prefix, e.g. "document." or "session.login". */
  action?: string;
  actor?: string;
  limit?: number;
  /** An event id: only older events. */
  before?: number | null;
}

export function listAudit(q: AuditQuery = {}): Promise<AuditPage> {
  const qs = new URLSearchParams();
  if (q.action) qs.set("action", q.action);
  if (q.actor) qs.set("actor", q.actor);
  qs.set("limit", String(q.limit ?? 50));
  if (q.before != null) qs.set("before", String(q.before));
  return json<AuditPage>("GET", `/audit?${qs}`);
}

// --- review queue, regression runs, gaps (editors), analytics (admins) -------------------------------------------

export const listReviewItems = (status: ReviewStatus | "all" = "open") =>
  json<{ items: ReviewItem[] }>("GET", `/review/items?status=${status}`).then((r) => r.items);

export const searchReviewSections = (id: string, q: string) =>
  json<{ query: string; results: SectionHit[] }>(
    "GET",
    `/review/items/${encodeURIComponent(id)}/search${q ? `?q=${encodeURIComponent(q)}` : ""}`,
  );

export const updateReviewItem = (id: string, update: ReviewUpdate) =>
  json<ReviewItem>("PUT", `/review/items/${encodeURIComponent(id)}`, update);

export const startRegressionRun = () => json<RegressionRun>("POST", "/review/runs");

export const listRegressionRuns = () => json<{ runs: RegressionRun[] }>("GET", "/review/runs").then((r) => r.runs);

export const getRegressionRun = (id: string) => json<RegressionRun>("GET", `/review/runs/${encodeURIComponent(id)}`);

export const getGaps = (days = 30) => json<GapsReport>("GET", `/review/gaps?days=${days}`);

/** Where the browser downloads the gaps report as CSV (a plain GET: the session cookie authenticates it). */
export const gapsCsvUrl = (days = 30) => `${API_BASE}/review/gaps?days=${days}&format=csv`;

export const getAnalytics = (days = 30) => json<AnalyticsReport>("GET", `/analytics?days=${days}`);

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    const wait = err.retryAfterS !== null ? ` Try again in ${err.retryAfterS} s.` : "";
    return `${err.message} (${err.code})${wait}`;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

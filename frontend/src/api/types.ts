// Wire types of the kbqa HTTP API (v1). Field names match the JSON exactly.

export type Role = "admin" | "editor" | "agent";

export const ROLES: Role[] = ["agent", "editor", "admin"];

export interface Session {
  csrf_token: string;
  role: Role;
  tenant: string;
  /** "user": signed in with email and password; "key": signed in with an API key. */
  kind: "user" | "key";
  /** The user's display name, or the key's name. */
  name: string;
  /** Same as `name`; kept for older servers. */
  key_name: string;
}

export interface Source {
  n: number;
  chunk_id: string;
  document_id: string;
  title: string;
  section_path: string[];
  page_start: number | null;
  page_end: number | null;
  score: number;
  text: string;
}

export interface Citation {
  n: number;
  chunk_id: string;
  document_id: string;
  title: string;
  section: string;
  page_start: number | null;
  page_end: number | null;
  sentence: string;
  supported: boolean;
}

export interface Versions {
  chunker: string;
  embedder: string;
  prompt_template: string;
  model: string;
}

export interface MetaEvent {
  request_id: string;
  conversation_id: string;
  message_id: string;
  versions: Versions;
}

/** How the answer stands against the documents: answered; partial (some of what was asked is not in them); not found. */
export type Outcome = "answered" | "partial" | "not_found";

/** "excerpt": quoted from the documents by the extractive composer; "generated": written by a language model. */
export type AnswerMode = "excerpt" | "generated";

/** The section the answer comes from. */
export interface AnswerUnit {
  /** "Troubleshooting Guide › A device shows as offline" */
  label: string;
  document_id: string;
  section_path: string[];
  /** Numbers (`n`) of the `sources` entries that make up the section, in order. */
  sources: number[];
}

export interface DoneEvent {
  usage: { prompt_tokens: number; completion_tokens: number };
  timings_ms: Record<string, number>;
  refused: boolean;
  degraded: boolean;
  answer: string;
  /** Milliseconds each retrieval stage itself took (keyword, vector, graph, fuse, and within fuse hop2 and links, rerank, total); empty when retrieval did not run. */
  retrieval_timings_ms?: Record<string, number>;
  /** Retrieval stages skipped because they failed or timed out (the `degraded` event's retrieval reasons). */
  retrieval_degraded?: string[];
  /** Absent from older servers and from the `done` that follows an `error`. `refused` stays true for not_found. */
  outcome?: Outcome;
  /** What the question asks that the documents do not mention (partial answers). */
  missing?: string[];
  /** Those of `missing` that the answering section names, but not where it answers (check the answer applies). */
  unlinked?: string[];
  /** The answering section; null when nothing was answered. */
  unit?: AnswerUnit | null;
  mode?: AnswerMode;
}

/** One parsed event of the /ask stream, discriminated on `type`. */
export type AskEvent =
  | { type: "meta"; data: MetaEvent }
  | { type: "sources"; data: { sources: Source[] } }
  | { type: "token"; data: { text: string } }
  | { type: "citations"; data: { citations: Citation[] } }
  | { type: "degraded"; data: { reasons: string[] } }
  | { type: "done"; data: DoneEvent }
  | { type: "error"; data: { code: string; message: string } };

export interface Chunk {
  chunk_id: string;
  document_id: string;
  title: string;
  section_path: string[];
  page_start: number | null;
  page_end: number | null;
  text: string;
  /** "pdf", "html", "markdown", "docx", ... (empty while the document is being parsed). */
  doc_type?: string;
}

/** GET /chunks/{id}/section: the section's stored text; text.slice(highlight_start, highlight_end) is the passage. */
export interface ChunkSection {
  chunk_id: string;
  document_id: string;
  document_version: number;
  title: string;
  doc_type: string;
  section_path: string[];
  page_start: number | null;
  page_end: number | null;
  text: string;
  highlight_start: number;
  highlight_end: number;
  truncated: boolean;
}

export interface ConversationSummary {
  id: string;
  title: string;
  updated_at: string;
}

export interface ConversationMessage {
  id: string;
  role: "user" | "assistant";
  content: string;
  citations?: Citation[] | null;
  created_at: string;
}

export interface Conversation {
  id: string;
  title: string;
  messages: ConversationMessage[];
}

export const DOC_STATUSES = [
  "queued",
  "parsing",
  "chunking",
  "embedding",
  "indexing",
  "indexed",
  "failed",
] as const;
export type DocStatus = (typeof DOC_STATUSES)[number];

/** How many documents of each status match the list's other filters (only documents the caller may see). */
export type StatusCounts = Record<DocStatus, number>;

/** Orders of the document list: newest or oldest change first, title A-Z or Z-A. */
export const DOC_SORTS = [
  ["newest", "Newest first"],
  ["oldest", "Oldest first"],
  ["title", "Title A-Z"],
  ["title_desc", "Title Z-A"],
] as const;
export type DocSort = (typeof DOC_SORTS)[number][0];

/** What a bulk action did to one id; a document the caller may not see reads "not_found". */
export type BulkOutcome = "done" | "not_found" | "forbidden" | "conflict";

export interface BulkResult {
  action: "delete" | "reindex";
  results: { id: string; result: BulkOutcome; message?: string | null }[];
  done: number;
  not_found: number;
  forbidden: number;
  conflict: number;
}

export function isTerminal(status: string): boolean {
  return status === "indexed" || status === "failed";
}

export interface UploadedDocument {
  id: string;
  filename: string;
  status: DocStatus;
  duplicate: boolean;
}

export interface DocumentSummary {
  id: string;
  title: string;
  filename: string;
  doc_type: string;
  status: DocStatus;
  version: number;
  chunk_count: number;
  failure_reason: string | null;
  updated_at: string;
  size_bytes: number;
}

export interface Stage {
  name: string;
  status: string;
  progress: number | null;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
  /** While parsing: "N of M" pages (slides, image frames) read so far. */
  detail?: string;
  /** What the parser could not read, said out loud (never a silent partial document). */
  warnings?: string[];
  /** Pages read by OCR and their confidence (0-100) by page number. */
  ocr_pages?: number;
  ocr_confidence?: Record<string, number>;
  /** A long PDF parsed in page-range parts: parts finished (saved) of all. */
  parts_done?: number;
  parts_total?: number;
  /** Set when this attempt resumed from parts an earlier (interrupted) attempt saved: its first page parsed. */
  resumed_from_page?: number;
}

export interface DocumentDetail extends DocumentSummary {
  stages: Stage[];
}

export interface ApiKey {
  id: string;
  name: string;
  role: Role;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked: boolean;
}

export interface CreatedKey extends ApiKey {
  key: string;
}

export type ActorKind = "user" | "key" | "system";

export interface UsageRow {
  actor_kind: ActorKind;
  actor_id: string;
  actor_name: string;
  day: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface User {
  id: string;
  email: string;
  name: string;
  role: Role;
  acl_groups: string[];
  created_at: string;
  last_login_at: string | null;
  disabled: boolean;
}

export interface NewUser {
  email: string;
  name: string;
  role: Role;
  acl_groups: string[];
  password: string;
}

export type UserPatch = Partial<Pick<User, "name" | "role" | "acl_groups" | "disabled">> & { password?: string };

export interface AuditEvent {
  id: number;
  created_at: string;
  actor_kind: ActorKind;
  actor_id: string | null;
  actor_name: string;
  action: string;
  target: string;
  detail: Record<string, unknown>;
}

export interface AuditPage {
  events: AuditEvent[];
  /** Pass as `before` to get the next (older) page; null when there is none. */
  next_before: number | null;
}

// --- review queue, regression runs, knowledge gaps, analytics ------------------------------------------------------

export interface ReviewSource {
  n: number | null;
  chunk_id: string | null;
  document_id: string | null;
  title: string;
  section_path: string[];
  page_start: number | null;
  page_end: number | null;
}

export type ReviewStatus = "open" | "reviewed" | "dismissed";

export interface ReviewItem {
  id: string;
  message_id: string;
  question: string;
  answer: string;
  outcome: string;
  /** Why it is in the queue: "thumbs_down", "not_found", "partial". */
  reasons: string[];
  comment: string;
  sources: ReviewSource[];
  /** Sources from documents outside the reviewer's ACL groups (not shown). */
  hidden_sources: number;
  status: ReviewStatus;
  expected: {
    chunk_id: string | null;
    document_id: string | null;
    title: string;
    section_path: string[];
    facts: string[];
    document_missing: boolean;
  };
  reviewed_at: string | null;
  created_at: string;
}

export interface ReviewUpdate {
  chunk_id: string | null;
  facts: string[];
  document_missing: boolean;
  status?: ReviewStatus;
}

export interface SectionHit {
  chunk_id: string;
  document_id: string;
  title: string;
  section_path: string[];
  page_start: number | null;
  text: string;
  score: number;
}

export interface SectionRef {
  document_id: string | null;
  title: string;
  section_path: string[];
}

export interface RunResult {
  item_id: string;
  question: string;
  passed: boolean;
  section_ok: boolean | null;
  facts_ok: boolean | null;
  document_missing_ok: boolean | null;
  missing_facts: string[];
  expected_section: SectionRef;
  cited_sections: SectionRef[];
  outcome: string;
  answer: string;
  degraded: string[];
  error: string;
  change: "new" | "same" | "fixed" | "broke";
  latency_ms: number;
}

export interface RegressionRun {
  id: string;
  actor_name: string;
  started_at: string;
  finished_at: string | null;
  total: number;
  passed: number;
  failed: number;
  previous_run_id: string | null;
  changes: Record<string, number>;
  results: RunResult[];
}

export interface GapTopic {
  label: string;
  terms: string[];
  count: number;
  reasons: Record<string, number>;
  /** Questions per day, oldest first. */
  trend: number[];
  examples: string[];
  documents: { document_id: string; title: string; section_path: string[]; score: number }[];
}

export interface GapsReport {
  days: number;
  total: number;
  topics: GapTopic[];
}

export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
}

export interface AnalyticsReport {
  days: number;
  questions_per_day: { day: string; questions: number; tokens: number }[];
  outcome_mix: Record<string, number>;
  latency_ms: Record<"first_token" | "total", Percentiles>;
  most_cited: { document_id: string; title: string; answers: number }[];
  never_cited: { days: number; count: number; documents: { document_id: string; title: string; created_at: string }[] };
}

// Generated from the API's OpenAPI schema by scripts/gen_api_types.py: do not edit by hand.
// Regenerate with `make api-types` after changing a response model.

export interface AnalyticsReport {
  days: number;
  questions_per_day: DayCount[];
  outcome_mix: Record<string, number>;
  latency_ms: Record<string, Record<string, number>>;
  most_cited: CitedDocument[];
  never_cited: NeverCited;
}

export interface AskFilters {
  doc_types?: string[];
  tags?: string[];
  document_ids?: string[];
}

export interface AskRequest {
  question: string;
  conversation_id?: string | null;
  top_k?: number | null;
  filters?: AskFilters | null;
}

export interface AuditEventView {
  id: number;
  created_at: string;
  actor_kind: "user" | "key" | "system";
  actor_id: string | null;
  actor_name: string;
  action: string;
  target: string;
  detail: Record<string, unknown>;
}

export interface AuditPage {
  events: AuditEventView[];
  next_before: number | null;
}

export interface Body_upload_api_v1_documents_post {
  files: string[];
  acl_groups?: string | null;
  tags?: string | null;
}

export interface BulkItemResult {
  id: string;
  result: BulkOutcome;
  message?: string | null;
}

/** What a bulk action did to one id. An id of another tenant, or of a document outside the caller's ACL groups, reads ``not_found`` exactly like an id that never existed. */
export type BulkOutcome = "done" | "not_found" | "forbidden" | "conflict";

export interface BulkRequest {
  ids: string[];
}

export interface BulkResult {
  action: "delete" | "reindex";
  results: BulkItemResult[];
  done: number;
  not_found: number;
  forbidden: number;
  conflict: number;
}

export interface ChatCompletionRequest {
  model?: string;
  messages: ChatMessage[];
  stream?: boolean;
  max_tokens?: number | null;
  temperature?: number | null;
  user?: string | null;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool" | "developer";
  content?: string | null;
}

export interface CitedDocument {
  document_id: string;
  title: string;
  answers: number;
}

export interface ConversationList {
  conversations: ConversationSummary[];
}

export interface ConversationSummary {
  id: string;
  title: string;
  updated_at: string;
}

export interface ConversationView {
  id: string;
  title: string;
  messages: MessageView[];
}

export interface DayCount {
  day: string;
  questions: number;
  tokens: number;
}

export interface DocumentDetail {
  id: string;
  title: string;
  filename: string;
  doc_type: string;
  mime_type: string;
  status: DocumentStatus;
  version: number;
  chunk_count: number;
  failure_reason: string | null;
  size_bytes: number;
  page_count: number | null;
  acl_groups: string[];
  tags: string[];
  chunker_version: string | null;
  embedder_version: string | null;
  created_at: string;
  updated_at: string;
  stages: StageView[];
  attempts: number;
}

export interface DocumentPage {
  documents: DocumentView[];
  total: number;
  limit: number;
  next_cursor: string | null;
  sort: DocumentSort;
  status_counts: StatusCounts;
}

/** Orders of the document list (each pages by keyset): newest or oldest change first, title A-Z or Z-A. */
export type DocumentSort = "newest" | "oldest" | "title" | "title_desc";

/** Lifecycle of an uploaded document. Every document ends ``indexed`` or ``failed``. */
export type DocumentStatus = "queued" | "parsing" | "chunking" | "embedding" | "indexing" | "indexed" | "failed";

export interface DocumentView {
  id: string;
  title: string;
  filename: string;
  doc_type: string;
  mime_type: string;
  status: DocumentStatus;
  version: number;
  chunk_count: number;
  failure_reason: string | null;
  size_bytes: number;
  page_count: number | null;
  acl_groups: string[];
  tags: string[];
  chunker_version: string | null;
  embedder_version: string | null;
  created_at: string;
  updated_at: string;
}

export interface Expected {
  chunk_id: string | null;
  document_id: string | null;
  title: string;
  section_path: string[];
  facts: string[];
  document_missing: boolean;
}

export interface FeedbackCreated {
  id: string;
}

export interface FeedbackRequest {
  message_id: string;
  rating: "up" | "down";
  comment?: string;
}

export interface GapDocument {
  document_id: string;
  title: string;
  section_path: string[];
  score: number;
}

export interface GapTopic {
  label: string;
  terms: string[];
  count: number;
  reasons: Record<string, number>;
  trend: number[];
  examples: string[];
  documents: GapDocument[];
}

export interface GapsReport {
  days: number;
  total: number;
  topics: GapTopic[];
}

export interface HTTPValidationError {
  detail?: ValidationError[];
}

export interface KeyCreate {
  name: string;
  role?: Role;
  acl_groups?: string[];
}

export interface KeyCreated {
  id: string;
  name: string;
  role: Role;
  prefix: string;
  acl_groups: string[];
  created_at: string;
  last_used_at: string | null;
  revoked: boolean;
  key: string;
}

export interface KeyList {
  keys: KeyView[];
}

export interface KeyView {
  id: string;
  name: string;
  role: Role;
  prefix: string;
  acl_groups: string[];
  created_at: string;
  last_used_at: string | null;
  revoked: boolean;
}

export interface LoginMethods {
  password: boolean;
  sso: boolean;
  sso_login_url?: string | null;
}

export interface MessageView {
  id: string;
  role: "user" | "assistant";
  content: string;
  citations: unknown[];
  meta: Record<string, unknown>;
  created_at: string;
}

export interface NeverCited {
  days: number;
  count: number;
  documents: UncitedDocument[];
}

export interface Passage {
  chunk_id: string;
  document_id: string;
  document_version: number;
  title: string;
  section_path: string[];
  page_start: number | null;
  page_end: number | null;
  text: string;
  doc_type: string;
  element_types: string[];
  chunker_version: string;
}

export interface PasswordChange {
  current_password: string;
  new_password: string;
}

export interface ReindexQueued {
  id: string;
  status: string;
  version: number;
}

export interface ReviewItemOut {
  id: string;
  message_id: string;
  question: string;
  answer: string;
  outcome: string;
  reasons: string[];
  comment: string;
  sources: Source[];
  hidden_sources: number;
  status: string;
  expected: Expected;
  reviewed_at: string | null;
  created_at: string;
}

export interface ReviewList {
  items: ReviewItemOut[];
}

export interface ReviewUpdate {
  chunk_id?: string | null;
  facts?: string[];
  document_missing?: boolean;
  status?: "reviewed" | "dismissed" | "open";
}

/** API roles, from most to least privileged. */
export type Role = "admin" | "editor" | "agent";

export interface RunList {
  runs: RunOut[];
}

export interface RunOut {
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
  degraded?: string[];
  error: string;
  change: "new" | "same" | "fixed" | "broke";
  latency_ms: number;
}

export interface SearchHit {
  chunk_id: string;
  document_id: string;
  document_version: number;
  title: string;
  section_path: string[];
  page_start: number | null;
  page_end: number | null;
  text: string;
  doc_type: string;
  element_types: string[];
  chunker_version: string;
  score: number;
  scores: Record<string, number>;
  ranks: Record<string, number>;
}

export interface SearchResults {
  query: string;
  results: SearchHit[];
  degraded: string[];
  timings_ms: Record<string, number>;
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

export interface SectionSearch {
  query: string;
  results: SectionHit[];
}

/** The stored text of the section a passage belongs to; ``text[highlight_start:highlight_end]`` is the passage. */
export interface SectionView {
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

/** Either ``email`` and ``password`` (a user) or ``api_key`` (a key, for tools and kiosks). */
export interface SessionCreate {
  email?: string | null;
  password?: string | null;
  api_key?: string | null;
  tenant?: string | null;
}

export interface Source {
  n?: number | null;
  chunk_id?: string | null;
  document_id?: string | null;
  title?: string;
  section_path?: string[];
  page_start?: number | null;
  page_end?: number | null;
}

/** One ingestion stage (parse, chunk, embed, index, ...) with what the pipeline recorded for it. */
export interface StageView {
  name: string;
  [key: string]: unknown;
}

/** How many documents of each status match the list's other filters (every filter but ``status``), counted with the same tenant and ACL groups as the list: nobody counts a document they could not see. */
export interface StatusCounts {
  queued: number;
  parsing: number;
  chunking: number;
  embedding: number;
  indexing: number;
  indexed: number;
  failed: number;
}

export interface UncitedDocument {
  document_id: string;
  title: string;
  created_at: string;
}

export interface UploadResult {
  documents: UploadedDocument[];
}

export interface UploadedDocument {
  id: string;
  filename: string;
  status: DocumentStatus;
  version: number;
  duplicate: boolean;
}

export interface UsageList {
  usage: UsageRow[];
}

export interface UsageRow {
  actor_kind: "user" | "key" | "system";
  actor_id: string;
  actor_name: string;
  day: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface UserCreate {
  email: string;
  name?: string;
  role?: Role;
  acl_groups?: string[];
  password: string;
}

export interface UserList {
  users: UserView[];
}

export interface UserUpdate {
  name?: string | null;
  role?: Role | null;
  acl_groups?: string[] | null;
  disabled?: boolean | null;
  password?: string | null;
}

export interface UserView {
  id: string;
  email: string;
  name: string;
  role: Role;
  acl_groups: string[];
  created_at: string;
  last_login_at: string | null;
  disabled: boolean;
}

export interface ValidationError {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

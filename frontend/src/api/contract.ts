// The web app's REST types (types.ts) checked against the types generated from the API's OpenAPI schema
// (schema.gen.ts, `make api-types`): each response the server declares must be assignable to the type the app reads
// it as. A response model change that the app does not follow fails `tsc -b` (the frontend build and its tests).
import type * as S from "./schema.gen";
import type * as T from "./types";

type Assignable<From, To> = [From] extends [To] ? true : false;

export const RESPONSES_MATCH_THE_APP: [
  Assignable<S.UserView, T.User>,
  Assignable<S.UserList["users"], T.User[]>,
  Assignable<S.KeyView, T.ApiKey>,
  Assignable<S.KeyCreated, T.CreatedKey>,
  Assignable<S.UsageRow, T.UsageRow>,
  Assignable<S.AuditEventView, T.AuditEvent>,
  Assignable<S.AuditPage, T.AuditPage>,
  Assignable<S.ConversationSummary, T.ConversationSummary>,
  Assignable<S.DocumentView, T.DocumentSummary>,
  Assignable<S.UploadedDocument, T.UploadedDocument>,
  Assignable<S.SectionView, T.ChunkSection>,
  Assignable<S.Passage, T.Chunk>,
  Assignable<S.StatusCounts, T.StatusCounts>,
  Assignable<S.DocumentSort, T.DocSort>,
  Assignable<S.BulkResult, T.BulkResult>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true, true, true];

import { useState } from "react";
import { DOC_SORTS, DOC_STATUSES, type DocSort, type DocumentSummary, type StatusCounts } from "../api/types";
import { formatTime } from "../ui/format";
import { Table } from "../ui/Table";

export type BulkAction = "delete" | "reindex";

interface Props {
  documents: DocumentSummary[];
  status: string;
  query: string;
  onFilter: (f: { status: string; query: string }) => void;
  onDelete: (id: string) => void;
  onRetry: (id: string) => void;
  /** Counts per status of the documents matching the other filters (shown as filter chips when given). */
  counts?: StatusCounts | null;
  sort?: DocSort;
  onSort?: (sort: DocSort) => void;
  /** File type and tag filters (shown when `onFacets` is given). */
  facets?: { docType: string; tag: string };
  onFacets?: (f: { docType: string; tag: string }) => void;
  /** Ids ticked for a bulk action; with `onSelect` and `onBulk` the rows get checkboxes. */
  selected?: ReadonlySet<string>;
  onSelect?: (ids: string[], on: boolean) => void;
  onBulk?: (action: BulkAction, ids: string[]) => void;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

const BULK_LABEL: Record<BulkAction, string> = { delete: "Delete", reindex: "Reindex" };

/** Status counts as chips: "All" plus each status that has documents (or is the one chosen). */
function StatusChips({ counts, status, onStatus }: { counts: StatusCounts; status: string; onStatus: (s: string) => void }) {
  const all = DOC_STATUSES.reduce((n, s) => n + (counts[s] ?? 0), 0);
  const shown = DOC_STATUSES.filter((s) => (counts[s] ?? 0) > 0 || s === status);
  return (
    <div className="status-chips" role="group" aria-label="Filter by status">
      <button type="button" className="chip" aria-pressed={status === ""} onClick={() => onStatus("")}>
        All {all}
      </button>
      {shown.map((s) => (
        <button
          key={s}
          type="button"
          className="chip"
          data-status={s}
          aria-pressed={status === s}
          onClick={() => onStatus(s)}
        >
          {s} {counts[s] ?? 0}
        </button>
      ))}
    </div>
  );
}

/** Document list with status, sort and text filters, bulk actions on ticked rows; every delete asks for a second
 * click. */
export function DocumentTable({
  documents,
  status,
  query,
  onFilter,
  onDelete,
  onRetry,
  counts,
  sort,
  onSort,
  facets = { docType: "", tag: "" },
  onFacets,
  selected,
  onSelect,
  onBulk,
}: Props) {
  const [confirming, setConfirming] = useState<string | null>(null);
  const [confirmingBulk, setConfirmingBulk] = useState<BulkAction | null>(null);
  const selectable = selected !== undefined && onSelect !== undefined && onBulk !== undefined;
  const chosen = selectable ? [...selected] : [];
  const allShown = documents.length > 0 && documents.every((d) => selected?.has(d.id));
  return (
    <section aria-label="Documents">
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="doc-status">Status</label>
        <select id="doc-status" value={status} onChange={(e) => onFilter({ status: e.target.value, query })}>
          <option value="">All</option>
          {DOC_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label htmlFor="doc-query">Search</label>
        <input id="doc-query" type="search" value={query} onChange={(e) => onFilter({ status, query: e.target.value })} />
        {onFacets && (
          <>
            <label htmlFor="doc-type">Type</label>
            <input
              id="doc-type"
              size={6}
              placeholder="pdf, docx…"
              value={facets.docType}
              onChange={(e) => onFacets({ ...facets, docType: e.target.value })}
            />
            <label htmlFor="doc-tag">Tag</label>
            <input id="doc-tag" size={10} value={facets.tag} onChange={(e) => onFacets({ ...facets, tag: e.target.value })} />
          </>
        )}
        {onSort && (
          <>
            <label htmlFor="doc-sort">Sort</label>
            <select id="doc-sort" value={sort ?? "newest"} onChange={(e) => onSort(e.target.value as DocSort)}>
              {DOC_SORTS.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </>
        )}
      </form>
      {counts && <StatusChips counts={counts} status={status} onStatus={(s) => onFilter({ status: s, query })} />}
      {selectable && chosen.length > 0 && (
        <div className="bulk-bar" role="group" aria-label="Selected documents">
          <span>{chosen.length} selected</span>
          {confirmingBulk ? (
            <>
              <span>
                {BULK_LABEL[confirmingBulk]} {chosen.length} document{chosen.length === 1 ? "" : "s"}?
              </span>
              <button
                type="button"
                className={confirmingBulk === "delete" ? "danger" : undefined}
                onClick={() => {
                  const action = confirmingBulk;
                  setConfirmingBulk(null);
                  onBulk(action, chosen);
                }}
              >
                Confirm {confirmingBulk}
              </button>
              <button type="button" onClick={() => setConfirmingBulk(null)}>
                Cancel
              </button>
            </>
          ) : (
            <>
              <button type="button" className="danger" onClick={() => setConfirmingBulk("delete")}>
                Delete selected
              </button>
              <button type="button" onClick={() => setConfirmingBulk("reindex")}>
                Reindex selected
              </button>
              <button type="button" onClick={() => onSelect(chosen, false)}>
                Clear selection
              </button>
            </>
          )}
        </div>
      )}
      <Table
        label="Documents"
        className="doc-table"
        columns={[
          ...(selectable
            ? [
                <input
                  type="checkbox"
                  aria-label="Select all shown"
                  checked={allShown}
                  disabled={documents.length === 0}
                  onChange={(e) => onSelect(documents.map((d) => d.id), e.target.checked)}
                />,
              ]
            : []),
          "Title",
          "Type",
          "Status",
          "Version",
          "Chunks",
          "Size",
          "Updated",
          <span className="visually-hidden">Actions</span>,
        ]}
      >
        {documents.map((d) => (
          <tr key={d.id}>
            {selectable && (
              <td>
                <input
                  type="checkbox"
                  aria-label={`Select ${d.filename}`}
                  checked={selected.has(d.id)}
                  onChange={(e) => onSelect([d.id], e.target.checked)}
                />
              </td>
            )}
            <td className="wrap">
              {d.title || d.filename}
              {d.title && d.title !== d.filename && <div className="muted">{d.filename}</div>}
            </td>
            <td>{d.doc_type}</td>
            <td>
              <span className="status" data-status={d.status}>
                {d.status}
              </span>
              {d.status === "failed" && d.failure_reason && <div className="error">{d.failure_reason}</div>}
              {d.status === "queued" && d.failure_reason && <div className="muted">{d.failure_reason}</div>}
            </td>
            <td>{d.version}</td>
            <td>{d.chunk_count}</td>
            <td>{formatBytes(d.size_bytes)}</td>
            <td>{formatTime(d.updated_at)}</td>
            <td>
              <div className="actions">
                {d.status === "failed" && (
                  <button type="button" onClick={() => onRetry(d.id)} aria-label={`Retry ${d.filename}`}>
                    Retry
                  </button>
                )}
                {confirming === d.id ? (
                  <>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => {
                        setConfirming(null);
                        onDelete(d.id);
                      }}
                    >
                      Confirm delete
                    </button>
                    <button type="button" onClick={() => setConfirming(null)}>
                      Cancel
                    </button>
                  </>
                ) : (
                  <button type="button" onClick={() => setConfirming(d.id)} aria-label={`Delete ${d.filename}`}>
                    Delete
                  </button>
                )}
              </div>
            </td>
          </tr>
        ))}
      </Table>
      {documents.length === 0 && <p className="muted">No documents match.</p>}
    </section>
  );
}

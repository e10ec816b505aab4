import { useState } from "react";
import { DOC_STATUSES, type DocumentSummary } from "../api/types";
import { formatTime } from "../ui/format";
import { Table } from "../ui/Table";

interface Props {
  documents: DocumentSummary[];
  status: string;
  query: string;
  onFilter: (f: { status: string; query: string }) => void;
  onDelete: (id: string) => void;
  onRetry: (id: string) => void;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Document list with status and text filters; delete asks for a second click. */
export function DocumentTable({ documents, status, query, onFilter, onDelete, onRetry }: Props) {
  const [confirming, setConfirming] = useState<string | null>(null);
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
      </form>
      <Table
        label="Documents"
        className="doc-table"
        columns={[
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

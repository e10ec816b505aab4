import { useCallback, useEffect, useRef, useState } from "react";
import {
  bulkDocuments,
  deleteDocument,
  errorMessage,
  listDocuments,
  reindexDocument,
  uploadDocuments,
} from "../api/client";
import type { BulkResult, DocSort, DocumentSummary, StatusCounts, UploadedDocument } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { type BulkAction, DocumentTable } from "./DocumentTable";
import { DropZone } from "./DropZone";
import { fileFractions, type PendingUpload } from "./progress";
import { UploadList } from "./UploadList";

/** Documents fetched per page of the list ("Load more" fetches the next). */
export const PAGE_SIZE = 100;

/** What a bulk action did, in one line: "Deleted 3 of 4 documents; 1 not found." */
export function bulkSummary(r: BulkResult): string {
  const verb = r.action === "delete" ? "Deleted" : "Queued for reindexing";
  const asked = r.results.length;
  const rest = [
    r.not_found && `${r.not_found} not found`,
    r.forbidden && `${r.forbidden} not allowed`,
    r.conflict && `${r.conflict} already being indexed`,
  ].filter(Boolean);
  return `${verb} ${r.done} of ${asked} document${asked === 1 ? "" : "s"}${rest.length ? `; ${rest.join(", ")}` : ""}.`;
}

/** Upload portal: drop files, follow their jobs, and manage the document list. */
export function DocumentsPage() {
  const [uploads, setUploads] = useState<UploadedDocument[]>([]);
  const [documents, setDocuments] = useState<DocumentSummary[]>([]);
  const [total, setTotal] = useState(0);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [filter, setFilter] = useState({ status: "", query: "" });
  const [sort, setSort] = useState<DocSort>("newest");
  const [facets, setFacets] = useState({ docType: "", tag: "" });
  const [counts, setCounts] = useState<StatusCounts | null>(null);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [notice, setNotice] = useState<string | null>(null);
  const [aclGroups, setAclGroups] = useState("");
  const [tags, setTags] = useState("");
  const [pending, setPending] = useState<PendingUpload[]>([]);
  const uploading = pending.length > 0;
  const batchNo = useRef(0);
  const [error, setError] = useState<string | null>(null);

  const listFilters = useCallback(
    () => ({
      status: filter.status,
      q: filter.query.trim(),
      sort,
      doc_type: facets.docType.trim().toLowerCase(),
      tag: facets.tag.trim(),
    }),
    [filter, sort, facets],
  );

  const refresh = useCallback(() => {
    listDocuments({ ...listFilters(), limit: PAGE_SIZE }).then(
      (page) => {
        setDocuments(page.documents);
        setTotal(page.total);
        setNextCursor(page.next_cursor);
        setCounts(page.status_counts);
        // ticked rows stay ticked only while they are listed
        setSelected((prev) => new Set(page.documents.filter((d) => prev.has(d.id)).map((d) => d.id)));
      },
      (e: unknown) => setError(errorMessage(e)),
    );
  }, [listFilters]);

  function loadMore() {
    if (!nextCursor) return;
    listDocuments({ ...listFilters(), limit: PAGE_SIZE, cursor: nextCursor }).then(
      (page) => {
        setDocuments((prev) => [...prev, ...page.documents.filter((d) => !prev.some((p) => p.id === d.id))]);
        setTotal(page.total);
        setNextCursor(page.next_cursor);
        setCounts(page.status_counts);
      },
      (e: unknown) => setError(errorMessage(e)),
    );
  }

  function select(ids: string[], on: boolean) {
    setSelected((prev) => {
      const next = new Set(prev);
      for (const id of ids) {
        if (on) next.add(id);
        else next.delete(id);
      }
      return next;
    });
  }

  async function bulk(action: BulkAction, ids: string[]) {
    setError(null);
    setNotice(null);
    try {
      setNotice(bulkSummary(await bulkDocuments(action, ids)));
      setSelected(new Set());
    } catch (err) {
      setError(errorMessage(err));
    }
    refresh();
  }

  useEffect(() => {
    const t = window.setTimeout(refresh, 250); // debounce typing in the search box
    return () => window.clearTimeout(t);
  }, [refresh]);

  async function upload(files: File[]) {
    const batch = ++batchNo.current;
    const keys = files.map((f, i) => `${batch}-${i}-${f.name}`);
    const sizes = files.map((f) => f.size);
    setPending(files.map((f, i) => ({ key: keys[i], filename: f.name, size: f.size, fraction: 0 })));
    setError(null);
    try {
      const docs = await uploadDocuments(files, {
        aclGroups,
        tags,
        onProgress: (loaded, total) => {
          const fractions = fileFractions(sizes, loaded, total);
          setPending((prev) => prev.map((p) => ({ ...p, fraction: fractions[keys.indexOf(p.key)] ?? p.fraction })));
        },
      });
      setUploads((prev) => [...docs, ...prev.filter((p) => !docs.some((d) => d.id === p.id))]);
      refresh();
    } catch (err) {
      setError(`Upload of ${files.map((f) => f.name).join(", ")} failed: ${errorMessage(err)}`);
    } finally {
      setPending([]);
    }
  }

  async function act(f: () => Promise<unknown>) {
    setError(null);
    try {
      await f();
    } catch (err) {
      setError(errorMessage(err));
    }
    refresh();
  }

  return (
    <div className="documents-page">
      <section className="upload-panel" aria-label="Upload">
        <h2>Upload documents</h2>
        <div className="upload-options">
          <label htmlFor="acl-groups">ACL groups (comma-separated)</label>
          <input id="acl-groups" value={aclGroups} onChange={(e) => setAclGroups(e.target.value)} />
          <label htmlFor="tags">Tags (comma-separated)</label>
          <input id="tags" value={tags} onChange={(e) => setTags(e.target.value)} />
        </div>
        <DropZone disabled={uploading} onFiles={(f) => void upload(f)} />
        <ErrorAlert message={error} />
        <UploadList uploads={uploads} pending={pending} onSettled={refresh} />
      </section>
      <h2>Documents</h2>
      <DocumentTable
        documents={documents}
        status={filter.status}
        query={filter.query}
        onFilter={setFilter}
        onDelete={(id) => void act(() => deleteDocument(id))}
        onRetry={(id) => void act(() => reindexDocument(id))}
        counts={counts}
        sort={sort}
        onSort={setSort}
        facets={facets}
        onFacets={setFacets}
        selected={selected}
        onSelect={select}
        onBulk={(action, ids) => void bulk(action, ids)}
      />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <div className="documents-paging">
        <span className="muted">
          Showing {documents.length} of {total}
        </span>
        {nextCursor && (
          <button type="button" onClick={loadMore}>
            Load more
          </button>
        )}
      </div>
    </div>
  );
}

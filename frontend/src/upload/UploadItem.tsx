import { useEffect, useState } from "react";
import { errorMessage, getDocument, reindexDocument } from "../api/client";
import { isTerminal, type DocumentDetail, type UploadedDocument } from "../api/types";
import { formatDuration } from "../ui/format";

interface Props {
  upload: UploadedDocument;
  pollMs: number;
  onSettled?: (doc: DocumentDetail) => void;
}

/** One uploaded file: polls its job every `pollMs` until indexed or failed; failed jobs can be retried. */
export function UploadItem({ upload, pollMs, onSettled }: Props) {
  const [doc, setDoc] = useState<DocumentDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [round, setRound] = useState(0); // bumped by Retry to restart polling

  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    const tick = async () => {
      try {
        const d = await getDocument(upload.id);
        if (!live) return;
        setDoc(d);
        setError(null);
        if (isTerminal(d.status)) {
          onSettled?.(d);
          return;
        }
      } catch (err) {
        if (!live) return;
        setError(errorMessage(err));
      }
      timer = window.setTimeout(tick, pollMs);
    };
    void tick();
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
    // onSettled is a notification: a new function identity must not restart polling.
  }, [upload.id, pollMs, round]);

  async function retry() {
    setError(null);
    try {
      await reindexDocument(upload.id);
      setDoc((d) => (d ? { ...d, status: "queued", failure_reason: null } : d));
      setRound((r) => r + 1);
    } catch (err) {
      setError(errorMessage(err));
    }
  }

  const status = doc?.status ?? upload.status;
  return (
    <li className={`upload-item status-${status}`} aria-label={upload.filename}>
      <div className="upload-head">
        <strong>{upload.filename}</strong>
        {upload.duplicate && <span className="tag">duplicate</span>}
        <span className="status" data-status={status}>
          {status}
        </span>
      </div>
      {doc && doc.stages.length > 0 && (
        <ol className="stages">
          {doc.stages.map((s) => (
            <li key={s.name} data-status={s.status}>
              <span>{s.name}</span>
              <progress
                max={1}
                value={s.finished_at ? 1 : (s.progress ?? 0)}
                aria-label={`${upload.filename} ${s.name}`}
              />
              <span className="muted">
                {s.duration_ms != null ? formatDuration(s.duration_ms) : s.detail ? `page ${s.detail}` : s.status}
              </span>
            </li>
          ))}
        </ol>
      )}
      {doc?.stages
        .filter((s) => s.parts_total)
        .map((s) => (
          <p key={`${s.name}-parts`} className="muted parts-note">
            {s.parts_done ?? 0} of {s.parts_total} parts parsed
            {s.resumed_from_page ? `, resumed from page ${s.resumed_from_page} (earlier pages kept from the interrupted attempt)` : ""}
          </p>
        ))}
      {doc?.stages.some((s) => s.ocr_pages) && (
        <p className="muted">
          OCR read {doc.stages.reduce((n, s) => n + (s.ocr_pages ?? 0), 0)} page(s)
        </p>
      )}
      {doc?.stages.some((s) => s.warnings?.length) && (
        <ul className="stage-warnings" aria-label={`${upload.filename} warnings`}>
          {doc.stages.flatMap((s) => s.warnings ?? []).map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
      {status === "queued" && doc?.failure_reason && (
        <p className="muted retry-note" role="status">
          {doc.failure_reason}
        </p>
      )}
      {status === "failed" && (
        <div className="failure" role="alert">
          <span>Failed: {doc?.failure_reason ?? "unknown reason"}</span>{" "}
          <button type="button" onClick={retry}>
            Retry
          </button>
        </div>
      )}
      {error && <p className="error">{error}</p>}
    </li>
  );
}

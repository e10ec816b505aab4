import { useEffect, useRef, useState } from "react";
import { errorMessage, getChunk } from "../api/client";
import type { Chunk } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { OriginalView } from "../viewer/OriginalView";

export function pageLabel(start: number | null, end: number | null): string {
  if (start == null) return "";
  return end != null && end !== start ? `pp. ${start}–${end}` : `p. ${start}`;
}

/** CSS pixels a PDF page is drawn wide in the side panel and in the enlarged view. */
export const PANEL_PAGE_WIDTH = 320;
export function enlargedPageWidth(viewportWidth: number): number {
  return Math.max(PANEL_PAGE_WIDTH, Math.min(900, viewportWidth - 96));
}

interface Props {
  chunkId: string;
  onClose: () => void;
}

/** Side panel with the cited passage (from /chunks/{id}) shown in its original: the PDF page with the passage
 * highlighted, or the section with it marked. "Enlarge" turns the panel into a modal dialog over the page. */
export function SourcePanel({ chunkId, onClose }: Props) {
  const [chunk, setChunk] = useState<Chunk | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [enlarged, setEnlarged] = useState(false);
  const headingRef = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    let live = true;
    setChunk(null);
    setError(null);
    getChunk(chunkId).then(
      (c) => live && setChunk(c),
      (e: unknown) => live && setError(errorMessage(e)),
    );
    return () => {
      live = false;
    };
  }, [chunkId]);

  useEffect(() => {
    headingRef.current?.focus();
  }, [chunkId, enlarged]);

  const body = (
    <>
      <div className="panel-head">
        <h2 tabIndex={-1} ref={headingRef}>
          {chunk ? chunk.title : "Cited passage"}
        </h2>
        <div className="panel-actions">
          {chunk && (
            <button type="button" onClick={() => setEnlarged((v) => !v)} aria-pressed={enlarged}>
              {enlarged ? "Shrink" : "Enlarge"}
            </button>
          )}
          <button type="button" onClick={onClose} aria-label="Close cited passage">
            ×
          </button>
        </div>
      </div>
      <ErrorAlert message={error} />
      {!chunk && !error && <p aria-busy="true">Loading…</p>}
      {chunk && (
        <>
          {chunk.section_path.length > 0 && <p className="section-path">{chunk.section_path.join(" › ")}</p>}
          {chunk.page_start != null && <p className="pages">{pageLabel(chunk.page_start, chunk.page_end)}</p>}
          <OriginalView
            key={enlarged ? "enlarged" : "panel"}
            chunk={chunk}
            width={enlarged ? enlargedPageWidth(window.innerWidth) : PANEL_PAGE_WIDTH}
          />
        </>
      )}
    </>
  );
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.key === "Escape") onClose();
  };

  if (enlarged) {
    return (
      <div
        className="viewer-backdrop"
        onClick={(e) => {
          if (e.target === e.currentTarget) setEnlarged(false);
        }}
      >
        <div
          className="source-panel viewer-modal"
          role="dialog"
          aria-modal="true"
          aria-label="Cited passage in the original"
          onKeyDown={onKeyDown}
        >
          {body}
        </div>
      </div>
    );
  }
  return (
    <aside className="source-panel" aria-label="Cited passage" onKeyDown={onKeyDown}>
      {body}
    </aside>
  );
}

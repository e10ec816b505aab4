import { useEffect, useRef, useState } from "react";
import { errorMessage, getChunk } from "../api/client";
import type { Chunk } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";

export function pageLabel(start: number | null, end: number | null): string {
  if (start == null) return "";
  return end != null && end !== start ? `pp. ${start}–${end}` : `p. ${start}`;
}

interface Props {
  chunkId: string;
  onClose: () => void;
}

/** Side panel with the cited passage, fetched from /chunks/{id}. */
export function SourcePanel({ chunkId, onClose }: Props) {
  const [chunk, setChunk] = useState<Chunk | null>(null);
  const [error, setError] = useState<string | null>(null);
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
  }, [chunkId]);

  return (
    <aside
      className="source-panel"
      aria-label="Cited passage"
      onKeyDown={(e) => {
        if (e.key === "Escape") onClose();
      }}
    >
      <div className="panel-head">
        <h2 tabIndex={-1} ref={headingRef}>
          {chunk ? chunk.title : "Cited passage"}
        </h2>
        <button type="button" onClick={onClose} aria-label="Close cited passage">
          ×
        </button>
      </div>
      <ErrorAlert message={error} />
      {!chunk && !error && <p aria-busy="true">Loading…</p>}
      {chunk && (
        <>
          {chunk.section_path.length > 0 && <p className="section-path">{chunk.section_path.join(" › ")}</p>}
          {chunk.page_start != null && <p className="pages">{pageLabel(chunk.page_start, chunk.page_end)}</p>}
          <blockquote className="passage">{chunk.text}</blockquote>
        </>
      )}
    </aside>
  );
}

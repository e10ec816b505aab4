import { useEffect, useRef, useState } from "react";
import { errorMessage, getChunkSection, getOriginal, originalUrl } from "../api/client";
import type { Chunk, ChunkSection } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { splitAround } from "./match";
import { renderPdfPage, type RenderedPage } from "./pdf";

/** PDFs with a known page are shown as that page; everything else as its stored section text. */
export function showsPdfPage(chunk: Pick<Chunk, "doc_type" | "page_start">): boolean {
  return chunk.doc_type === "pdf" && chunk.page_start != null;
}

interface Props {
  chunk: Chunk;
  /** CSS pixels a PDF page is drawn wide. */
  width: number;
}

/** The cited passage in its original: the PDF page with the passage highlighted, or the section with it marked. */
export function OriginalView({ chunk, width }: Props) {
  return (
    <div className="original-view">
      {showsPdfPage(chunk) ? (
        <>
          <blockquote className="passage">{chunk.text}</blockquote>
          <PdfPage chunk={chunk} width={width} />
        </>
      ) : (
        <SectionText chunk={chunk} />
      )}
      <p className="original-link">
        <a href={originalUrl(chunk.document_id)} target="_blank" rel="noopener noreferrer">
          Open the original file
        </a>
      </p>
    </div>
  );
}

/** The page width: as asked, but no wider than the space there is (when the layout reports it; jsdom does not). */
export function fitWidth(wanted: number, available: number): number {
  return available > 0 ? Math.min(wanted, available - 2) : wanted;
}

function PdfPage({ chunk, width }: { chunk: Chunk; width: number }) {
  const hostRef = useRef<HTMLDivElement>(null);
  const [page, setPage] = useState<Omit<RenderedPage, "destroy"> | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    let rendered: RenderedPage | null = null;
    setPage(null);
    setError(null);
    (async () => {
      const data = await getOriginal(chunk.document_id);
      if (!live || !hostRef.current) return;
      rendered = await renderPdfPage({
        data,
        pageNumber: chunk.page_start ?? 1,
        passage: chunk.text,
        container: hostRef.current,
        width: fitWidth(width, hostRef.current.clientWidth),
      });
      if (!live) rendered.destroy();
      else setPage(rendered);
    })().catch((e: unknown) => live && setError(errorMessage(e)));
    return () => {
      live = false;
      rendered?.destroy();
    };
  }, [chunk.document_id, chunk.page_start, chunk.text, width]);

  return (
    <figure className="pdf-view" aria-label={`Page ${chunk.page_start} of ${chunk.title}`}>
      <ErrorAlert message={error} />
      {!page && !error && <p aria-busy="true">Rendering page {chunk.page_start}…</p>}
      <div className="pdf-host" ref={hostRef} data-testid="pdf-host" />
      {page && (
        <figcaption className="muted" role="status">
          Page {page.pageNumber} of {page.pageCount}
          {page.highlighted > 0
            ? ` — cited passage highlighted${page.coverage < 0.6 ? " (approximate)" : ""}`
            : " — the passage could not be located in the page text"}
        </figcaption>
      )}
    </figure>
  );
}

function SectionText({ chunk }: { chunk: Chunk }) {
  const chunkId = chunk.chunk_id;
  const [section, setSection] = useState<ChunkSection | null>(null);
  const [error, setError] = useState<string | null>(null);
  const markRef = useRef<HTMLElement>(null);

  useEffect(() => {
    let live = true;
    setSection(null);
    setError(null);
    getChunkSection(chunkId).then(
      (s) => live && setSection(s),
      (e: unknown) => live && setError(errorMessage(e)),
    );
    return () => {
      live = false;
    };
  }, [chunkId]);

  useEffect(() => {
    markRef.current?.scrollIntoView?.({ block: "nearest" });
  }, [section]);

  if (error) {
    // The section cannot be shown: the passage itself still can.
    return (
      <>
        <ErrorAlert message={error} />
        <blockquote className="passage">{chunk.text}</blockquote>
      </>
    );
  }
  if (!section) return <p aria-busy="true">Loading the section…</p>;
  const [before, passage, after] = splitAround(section.text, section.highlight_start, section.highlight_end);
  return (
    <section className="section-view" aria-label="Section of the original">
      {section.section_path.length > 0 && <h3 className="section-title">{section.section_path.at(-1)}</h3>}
      <div className="section-text">
        {section.truncated && <span className="muted">…</span>}
        {before}
        <mark ref={markRef} className="cited">
          {passage}
        </mark>
        {after}
        {section.truncated && <span className="muted">…</span>}
      </div>
    </section>
  );
}

// Renders one page of a PDF with pdf.js (canvas + text layer) and highlights the text-layer spans of a passage.
// pdf.js is loaded on first use (its own chunk), and its worker is a separate file Vite emits next to the bundle.
import workerUrl from "pdfjs-dist/build/pdf.worker.min.mjs?url";
import { coverage, matchPassage } from "./match";

type PdfJs = typeof import("pdfjs-dist");

let loading: Promise<PdfJs> | null = null;

/** The pdf.js module, with its worker configured (once). */
export function loadPdfJs(): Promise<PdfJs> {
  loading ??= import("pdfjs-dist").then((pdfjs) => {
    pdfjs.GlobalWorkerOptions.workerSrc = workerUrl;
    return pdfjs;
  });
  return loading;
}

export interface RenderedPage {
  /** The page shown (the requested one, clamped to the document). */
  pageNumber: number;
  pageCount: number;
  /** How many text-layer spans were highlighted. */
  highlighted: number;
  /** Share of the passage's words inside the highlight (0..1). */
  coverage: number;
  /** Releases pdf.js resources (the document and its worker-side state). */
  destroy: () => void;
}

export interface RenderOptions {
  data: ArrayBuffer;
  pageNumber: number;
  passage: string;
  /** The element the page goes into (emptied first). */
  container: HTMLElement;
  /** CSS pixels the page should be wide. */
  width: number;
}

/** Renders ``pageNumber`` of the PDF in ``data`` into ``container`` and highlights the passage on it. */
export async function renderPdfPage({ data, pageNumber, passage, container, width }: RenderOptions): Promise<RenderedPage> {
  const pdfjs = await loadPdfJs();
  // isEvalSupported: false keeps pdf.js from compiling font programs with eval (our CSP has no 'unsafe-eval').
  const doc = await pdfjs.getDocument({ data: new Uint8Array(data), isEvalSupported: false }).promise;
  try {
    const number = Math.min(Math.max(1, pageNumber), doc.numPages);
    const page = await doc.getPage(number);
    const base = page.getViewport({ scale: 1 });
    const viewport = page.getViewport({ scale: Math.max(0.25, width / base.width) });

    container.replaceChildren();
    const pageDiv = document.createElement("div");
    pageDiv.className = "pdf-page";
    pageDiv.style.setProperty("--total-scale-factor", String(viewport.scale));
    pageDiv.style.width = `${Math.floor(viewport.width)}px`;
    pageDiv.style.height = `${Math.floor(viewport.height)}px`;

    const canvas = document.createElement("canvas");
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.floor(viewport.width * ratio);
    canvas.height = Math.floor(viewport.height * ratio);
    canvas.style.width = `${Math.floor(viewport.width)}px`;
    canvas.style.height = `${Math.floor(viewport.height)}px`;
    canvas.setAttribute("aria-hidden", "true");
    const textDiv = document.createElement("div");
    textDiv.className = "textLayer";
    pageDiv.append(canvas, textDiv);
    container.append(pageDiv);

    await page.render({
      canvas,
      viewport,
      transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : undefined,
    }).promise;

    const textLayer = new pdfjs.TextLayer({
      textContentSource: await page.getTextContent(),
      container: textDiv,
      viewport,
    });
    await textLayer.render();
    const spans = textLayer.textDivs;
    const items = spans.map((s) => s.textContent ?? "");
    const chosen = matchPassage(items, passage);
    for (const idx of chosen) spans[idx]?.classList.add("highlight", "cited");
    const first = [...chosen].sort((a, b) => a - b)[0];
    if (first !== undefined) spans[first]?.scrollIntoView?.({ block: "nearest" });
    return {
      pageNumber: number,
      pageCount: doc.numPages,
      highlighted: chosen.size,
      coverage: coverage(items, chosen, passage),
      destroy: () => void doc.destroy(),
    };
  } catch (e) {
    void doc.destroy();
    throw e;
  }
}

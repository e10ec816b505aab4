import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Chunk } from "../api/types";
import { SourcePanel, enlargedPageWidth, PANEL_PAGE_WIDTH } from "../chat/SourcePanel";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { fitWidth, OriginalView, showsPdfPage } from "./OriginalView";
import { renderPdfPage } from "./pdf";

// pdf.js needs a real canvas (the browser e2e test draws real pages); here the page renderer is a spy.
vi.mock("./pdf", () => ({ renderPdfPage: vi.fn() }));
const renderSpy = vi.mocked(renderPdfPage);

const PDF_CHUNK: Chunk = {
  chunk_id: "c-pdf",
  document_id: "doc-pdf",
  title: "Cam Manual",
  section_path: ["Mounting"],
  page_start: 3,
  page_end: 3,
  text: "Mount the camera at least two metres above the ground.",
  doc_type: "pdf",
};
const MD_CHUNK: Chunk = { ...PDF_CHUNK, chunk_id: "c-md", document_id: "doc-md", doc_type: "markdown", page_start: null,
  page_end: null, title: "FAQ", section_path: ["Billing", "Refunds"], text: "Refunds take five days." };
const SECTION = {
  chunk_id: "c-md", document_id: "doc-md", document_version: 1, title: "FAQ", doc_type: "markdown",
  section_path: ["Billing", "Refunds"], page_start: null, page_end: null,
  text: "Ask support for a refund. Refunds take five days. Then check your bank.",
  highlight_start: 26, highlight_end: 49, truncated: false,
};
const PDF_BYTES = new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d]); // "%PDF-"

beforeEach(() => {
  renderSpy.mockReset();
  renderSpy.mockImplementation(async ({ pageNumber }) => ({
    pageNumber, pageCount: 7, highlighted: 4, coverage: 0.95, destroy: vi.fn(),
  }));
});

describe("showsPdfPage", () => {
  it("draws PDF pages only for PDFs with a known page", () => {
    expect(showsPdfPage(PDF_CHUNK)).toBe(true);
    expect(showsPdfPage({ ...PDF_CHUNK, page_start: null })).toBe(false);
    expect(showsPdfPage(MD_CHUNK)).toBe(false);
    expect(showsPdfPage({ page_start: 2 })).toBe(false);
  });
});

describe("fitWidth", () => {
  it("keeps the page inside the space there is, border included", () => {
    expect(fitWidth(320, 300)).toBe(298);
    expect(fitWidth(320, 800)).toBe(320);
    expect(fitWidth(320, 0)).toBe(320); // no layout (jsdom): as asked
  });
});

describe("OriginalView", () => {
  it("fetches the PDF original and renders the cited page with the passage to highlight", async () => {
    const { calls } = mockFetch({
      "GET /api/v1/documents/doc-pdf/original": () =>
        new Response(PDF_BYTES, { headers: { "Content-Type": "application/pdf" } }),
    });
    render(<OriginalView chunk={PDF_CHUNK} width={400} />);
    expect(await screen.findByRole("status")).toHaveTextContent("Page 3 of 7 — cited passage highlighted");
    expect(renderSpy).toHaveBeenCalledTimes(1);
    const args = renderSpy.mock.calls[0][0];
    expect(args).toMatchObject({ pageNumber: 3, passage: PDF_CHUNK.text, width: 400 });
    expect(new Uint8Array(args.data)).toEqual(PDF_BYTES);
    expect(args.container).toBe(screen.getByTestId("pdf-host"));
    expect(calls[0].init.credentials).toBe("same-origin");
    expect(screen.getByRole("link", { name: "Open the original file" })).toHaveAttribute(
      "href", "/api/v1/documents/doc-pdf/original",
    );
  });

  it("says so when the passage is not found on the page, and when the highlight is approximate", async () => {
    mockFetch({ "GET /api/v1/documents/doc-pdf/original": () => new Response(PDF_BYTES) });
    renderSpy.mockResolvedValueOnce({ pageNumber: 3, pageCount: 7, highlighted: 0, coverage: 0, destroy: vi.fn() });
    const { unmount } = render(<OriginalView chunk={PDF_CHUNK} width={300} />);
    expect(await screen.findByRole("status")).toHaveTextContent("could not be located");
    unmount();
    renderSpy.mockResolvedValueOnce({ pageNumber: 3, pageCount: 7, highlighted: 2, coverage: 0.4, destroy: vi.fn() });
    render(<OriginalView chunk={PDF_CHUNK} width={300} />);
    expect(await screen.findByRole("status")).toHaveTextContent("highlighted (approximate)");
  });

  it("shows the API's error when the original cannot be read, and draws nothing", async () => {
    mockFetch({
      "GET /api/v1/documents/doc-pdf/original": () =>
        jsonResponse({ error: { code: "not_found", message: "document doc-pdf not found" } }, 404),
    });
    render(<OriginalView chunk={PDF_CHUNK} width={300} />);
    expect(await screen.findByRole("alert")).toHaveTextContent("document doc-pdf not found");
    expect(renderSpy).not.toHaveBeenCalled();
  });

  it("releases the rendered PDF when it is closed", async () => {
    const destroy = vi.fn();
    renderSpy.mockResolvedValueOnce({ pageNumber: 3, pageCount: 7, highlighted: 1, coverage: 1, destroy });
    mockFetch({ "GET /api/v1/documents/doc-pdf/original": () => new Response(PDF_BYTES) });
    const { unmount } = render(<OriginalView chunk={PDF_CHUNK} width={300} />);
    await screen.findByRole("status");
    unmount();
    expect(destroy).toHaveBeenCalledTimes(1);
  });

  it("shows other documents as their section with the passage marked", async () => {
    mockFetch({ "GET /api/v1/chunks/c-md/section": () => jsonResponse(SECTION) });
    render(<OriginalView chunk={MD_CHUNK} width={300} />);
    const section = await screen.findByRole("region", { name: "Section of the original" });
    const mark = section.querySelector("mark");
    expect(mark).toHaveTextContent(/^Refunds take five days\.$/);
    expect(section).toHaveTextContent("Ask support for a refund. Refunds take five days. Then check your bank.");
    expect(within(section).getByRole("heading", { name: "Refunds" })).toBeInTheDocument();
    expect(renderSpy).not.toHaveBeenCalled();
  });

  it("falls back to the passage when the section cannot be loaded", async () => {
    mockFetch({});
    render(<OriginalView chunk={MD_CHUNK} width={300} />);
    expect(await screen.findByText("Refunds take five days.")).toBeInTheDocument();
    expect(screen.getByRole("alert")).toHaveTextContent("no route GET /api/v1/chunks/c-md/section");
  });
});

describe("SourcePanel viewer", () => {
  it("opens the cited page in the panel, enlarges it into a dialog and shrinks or closes it again", async () => {
    const user = userEvent.setup();
    mockFetch({
      "GET /api/v1/chunks/c-pdf": () => jsonResponse(PDF_CHUNK),
      "GET /api/v1/documents/doc-pdf/original": () => new Response(PDF_BYTES),
    });
    const onClose = vi.fn();
    render(<SourcePanel chunkId="c-pdf" onClose={onClose} />);
    const panel = await screen.findByRole("complementary", { name: "Cited passage" });
    await within(panel).findByRole("status");
    expect(renderSpy.mock.calls.at(-1)?.[0].width).toBe(PANEL_PAGE_WIDTH);

    await user.click(within(panel).getByRole("button", { name: "Enlarge" }));
    const dialog = await screen.findByRole("dialog", { name: "Cited passage in the original" });
    expect(screen.queryByRole("complementary")).toBeNull();
    await waitFor(() => expect(renderSpy.mock.calls.at(-1)?.[0].width).toBe(enlargedPageWidth(window.innerWidth)));
    expect(within(dialog).getByRole("heading", { name: "Cam Manual" })).toHaveFocus();

    await user.click(within(dialog).getByRole("button", { name: "Shrink" }));
    expect(await screen.findByRole("complementary", { name: "Cited passage" })).toBeInTheDocument();
    expect(screen.queryByRole("dialog")).toBeNull();

    await user.click(screen.getByRole("button", { name: "Enlarge" }));
    await screen.findByRole("dialog");
    await user.keyboard("{Escape}");
    expect(onClose).toHaveBeenCalledTimes(1);
  });

  it("closes the enlarged view when the backdrop is clicked", async () => {
    const user = userEvent.setup();
    mockFetch({
      "GET /api/v1/chunks/c-md": () => jsonResponse(MD_CHUNK),
      "GET /api/v1/chunks/c-md/section": () => jsonResponse(SECTION),
    });
    render(<SourcePanel chunkId="c-md" onClose={vi.fn()} />);
    await user.click(await screen.findByRole("button", { name: "Enlarge" }));
    const dialog = await screen.findByRole("dialog");
    await user.click(dialog.parentElement as HTMLElement);
    expect(await screen.findByRole("complementary", { name: "Cited passage" })).toBeInTheDocument();
  });

  it("sizes the enlarged page to the window, within limits", () => {
    expect(enlargedPageWidth(1400)).toBe(900);
    expect(enlargedPageWidth(800)).toBe(704);
    expect(enlargedPageWidth(300)).toBe(PANEL_PAGE_WIDTH);
  });
});

import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { DocumentDetail } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { UploadList } from "./UploadList";

function detail(status: DocumentDetail["status"], extra: Partial<DocumentDetail> = {}): DocumentDetail {
  return {
    id: "d1",
    title: "notes",
    filename: "notes.md",
    doc_type: "md",
    status,
    version: 1,
    chunk_count: status === "indexed" ? 4 : 0,
    failure_reason: null,
    updated_at: "2026-01-01T00:00:00Z",
    size_bytes: 100,
    stages: [
      { name: "parsing", status: "done", progress: 1, started_at: "a", finished_at: "b", duration_ms: 12 },
      { name: "embedding", status: status === "indexed" ? "done" : "running", progress: 0.5, started_at: "a", finished_at: status === "indexed" ? "b" : null, duration_ms: null },
    ],
    ...extra,
  };
}

describe("UploadList", () => {
  it("polls each upload through its stages until it is indexed, then stops", async () => {
    const sequence = [detail("parsing"), detail("embedding"), detail("indexed")];
    let polls = 0;
    mockFetch({ "GET /api/v1/documents/d1": () => jsonResponse(sequence[Math.min(polls++, sequence.length - 1)]) });
    const onSettled = vi.fn();
    render(
      <UploadList
        uploads={[{ id: "d1", filename: "notes.md", status: "queued", duplicate: false }]}
        pollMs={5}
        onSettled={onSettled}
      />,
    );
    const item = screen.getByRole("listitem", { name: "notes.md" });
    expect(within(item).getByText("queued")).toBeInTheDocument();
    await waitFor(() => expect(within(item).getByText("indexed")).toBeInTheDocument());
    expect(within(item).getByLabelText("notes.md parsing")).toHaveAttribute("value", "1");
    expect(onSettled).toHaveBeenCalledTimes(1);
    const settledAt = polls;
    await new Promise((r) => setTimeout(r, 40));
    expect(polls).toBe(settledAt);
  });

  it("shows the failure reason and retries with reindex", async () => {
    let failed = true;
    const reindexed = vi.fn();
    mockFetch({
      "GET /api/v1/documents/d1": () =>
        jsonResponse(failed ? detail("failed", { failure_reason: "unsupported encoding" }) : detail("indexed")),
      "POST /api/v1/documents/d1/reindex": () => {
        reindexed();
        failed = false;
        return jsonResponse({ id: "d1", status: "queued" }, 202);
      },
    });
    const user = userEvent.setup();
    render(<UploadList uploads={[{ id: "d1", filename: "notes.md", status: "queued", duplicate: true }]} pollMs={5} />);
    const item = screen.getByRole("listitem", { name: "notes.md" });
    expect(within(item).getByText("duplicate")).toBeInTheDocument();
    expect(await within(item).findByText("Failed: unsupported encoding")).toBeInTheDocument();
    await user.click(within(item).getByRole("button", { name: "Retry" }));
    expect(reindexed).toHaveBeenCalledTimes(1);
    await waitFor(() => expect(within(item).getByText("indexed")).toBeInTheDocument());
    expect(within(item).queryByRole("button", { name: "Retry" })).toBeNull();
  });
  it("says when a job waits to be retried because a service was down", async () => {
    let waiting = true;
    mockFetch({
      "GET /api/v1/documents/d1": () =>
        jsonResponse(
          waiting
            ? detail("queued", { failure_reason: "will retry in 30 s: weaviate index unavailable" })
            : detail("indexed"),
        ),
    });
    render(<UploadList uploads={[{ id: "d1", filename: "notes.md", status: "queued", duplicate: false }]} pollMs={5} />);
    const item = screen.getByRole("listitem", { name: "notes.md" });
    expect(await within(item).findByText("will retry in 30 s: weaviate index unavailable")).toBeInTheDocument();
    waiting = false;
    await waitFor(() => expect(within(item).getByText("indexed")).toBeInTheDocument());
    expect(within(item).queryByText(/will retry/)).toBeNull();
  });

  it("shows page progress while parsing, then the parser's warnings and OCR'd pages", async () => {
    const parsing = detail("parsing", {
      stages: [{ name: "parsing", status: "running", progress: 0.5, started_at: "a", finished_at: null, duration_ms: null, detail: "300 of 600" }],
    });
    const done = detail("indexed", {
      stages: [
        { name: "parsing", status: "done", progress: 1, started_at: "a", finished_at: "b", duration_ms: 12, ocr_pages: 2, warnings: ["page 7 could not be read (KeyError)"] },
      ],
    });
    let polls = 0;
    mockFetch({ "GET /api/v1/documents/d1": () => jsonResponse(polls++ < 2 ? parsing : done) });
    render(<UploadList uploads={[{ id: "d1", filename: "notes.md", status: "queued", duplicate: false }]} pollMs={5} />);
    const item = screen.getByRole("listitem", { name: "notes.md" });
    expect(await within(item).findByText("page 300 of 600")).toBeInTheDocument();
    expect(await within(item).findByText("page 7 could not be read (KeyError)")).toBeInTheDocument();
    expect(within(item).getByText("OCR read 2 page(s)")).toBeInTheDocument();
  });

  it("shows the parts of a long PDF and where a resumed attempt started", async () => {
    const resumed = detail("parsing", {
      stages: [
        { name: "parsing", status: "running", progress: 0.7, started_at: "a", finished_at: null, duration_ms: null, detail: "210 of 300", parts_done: 4, parts_total: 6, resumed_from_page: 151 },
      ],
    });
    mockFetch({ "GET /api/v1/documents/d1": () => jsonResponse(resumed) });
    render(<UploadList uploads={[{ id: "d1", filename: "manual.pdf", status: "queued", duplicate: false }]} pollMs={5} />);
    const item = screen.getByRole("listitem", { name: "manual.pdf" });
    expect(await within(item).findByText("page 210 of 300")).toBeInTheDocument();
    expect(
      within(item).getByText("4 of 6 parts parsed, resumed from page 151 (earlier pages kept from the interrupted attempt)"),
    ).toBeInTheDocument();
  });
});

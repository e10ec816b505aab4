import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { DocumentDetail } from "../api/types";
import { installFakeXhr, lastXhr } from "../test/fakeXhr";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { DocumentsPage } from "./DocumentsPage";

const QUEUED: DocumentDetail = {
  id: "d1",
  title: "notes",
  filename: "notes.md",
  doc_type: "md",
  status: "parsing",
  version: 1,
  chunk_count: 0,
  failure_reason: null,
  updated_at: "2026-01-01T00:00:00Z",
  size_bytes: 100,
  stages: [{ name: "parsing", status: "running", progress: 0.2, started_at: "a", finished_at: null, duration_ms: null }],
};

describe("DocumentsPage upload", () => {
  it("shows each file's byte progress, then hands over to the job's stages", async () => {
    installFakeXhr();
    mockFetch({
      "GET /api/v1/documents": () => jsonResponse({ documents: [] }),
      "GET /api/v1/documents/d1": () => jsonResponse(QUEUED),
    });
    const user = userEvent.setup();
    render(<DocumentsPage />);
    const notes = new File(["x".repeat(100)], "notes.md", { type: "text/markdown" });
    const big = new File(["y".repeat(300)], "big.md", { type: "text/markdown" });
    await user.upload(screen.getByLabelText("Choose files"), [notes, big]);

    const xhr = lastXhr();
    expect(xhr.url).toBe("/api/v1/documents");
    const first = screen.getByRole("listitem", { name: "notes.md" });
    const second = screen.getByRole("listitem", { name: "big.md" });
    expect(within(first).getByText("Uploading 0%")).toBeInTheDocument();
    expect(screen.getByLabelText("Choose files")).toBeDisabled();

    xhr.progress(42, 500); // 42/500 of 400 file bytes = 33.6 of notes.md's 100
    expect(await within(first).findByText("Uploading 33%")).toBeInTheDocument();
    expect(within(first).getByRole("progressbar", { name: "Uploading notes.md" })).toHaveAttribute("value", "33");
    expect(within(second).getByText("Uploading 0%")).toBeInTheDocument();

    xhr.progress(300, 500); // 240 bytes: notes.md done, big.md 140/300
    expect(await within(second).findByText("Uploading 46%")).toBeInTheDocument();
    expect(within(first).getByText("Uploaded, waiting for the server…")).toBeInTheDocument();

    xhr.respond(202, { documents: [{ id: "d1", filename: "notes.md", status: "queued", duplicate: false }] });
    await waitFor(() => expect(screen.queryByRole("progressbar", { name: "Uploading notes.md" })).toBeNull());
    const item = screen.getByRole("listitem", { name: "notes.md" }); // now the job, no longer the byte upload
    expect(await within(item).findByLabelText("notes.md parsing")).toBeInTheDocument();
    expect(within(item).queryByText(/Upload(ing|ed)/)).toBeNull();
    expect(screen.queryByRole("listitem", { name: "big.md" })).toBeNull();
    expect(screen.getByLabelText("Choose files")).toBeEnabled();
  });

  it("shows the API error when the upload is refused", async () => {
    installFakeXhr();
    mockFetch({ "GET /api/v1/documents": () => jsonResponse({ documents: [] }) });
    const user = userEvent.setup();
    render(<DocumentsPage />);
    await user.upload(screen.getByLabelText("Choose files"), [new File(["%PDF"], "scan.pdf")]);
    lastXhr().progress(10, 10);
    lastXhr().respond(415, { error: { code: "unsupported_media_type", message: "scanned PDFs are not supported" } });
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Upload of scan.pdf failed: scanned PDFs are not supported (unsupported_media_type)",
    );
    expect(screen.queryByRole("listitem", { name: "scan.pdf" })).toBeNull();
  });
});

describe("DocumentsPage list", () => {
  const doc = (id: string) => ({ ...QUEUED, id, filename: `${id}.md`, status: "indexed" as const });

  it("shows the total and loads the next page with the cursor", async () => {
    const { calls } = mockFetch({
      "GET /api/v1/documents": ({ url }) =>
        url.includes("cursor=c1")
          ? jsonResponse({ documents: [doc("d3")], total: 3, next_cursor: null })
          : jsonResponse({ documents: [doc("d1"), doc("d2")], total: 3, next_cursor: "c1" }),
    });
    const user = userEvent.setup();
    render(<DocumentsPage />);
    expect(await screen.findByText("Showing 2 of 3")).toBeInTheDocument();
    expect(calls[0].url).toContain("limit=100");
    await user.click(screen.getByRole("button", { name: "Load more" }));
    expect(await screen.findByText("Showing 3 of 3")).toBeInTheDocument();
    expect(screen.getByText("d3.md")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
  });

  it("filters by a status chip, sorts, and deletes the ticked documents in bulk with a summary", async () => {
    const counts = { queued: 0, parsing: 0, chunking: 0, embedding: 0, indexing: 0, indexed: 2, failed: 1 };
    let listed = [doc("d1"), doc("d2"), { ...doc("d3"), status: "failed" as const }];
    const { calls } = mockFetch({
      "GET /api/v1/documents": ({ url }) => {
        const status = new URL(url, "http://x").searchParams.get("status");
        const docs = listed.filter((d) => !status || d.status === status);
        return jsonResponse({ documents: docs, total: docs.length, next_cursor: null, status_counts: counts });
      },
      "POST /api/v1/documents/bulk-delete": ({ init }) => {
        const { ids } = JSON.parse(String(init.body)) as { ids: string[] };
        listed = listed.filter((d) => !ids.includes(d.id));
        return jsonResponse({
          action: "delete",
          results: [...ids.map((id) => ({ id, result: "done" })), { id: "gone", result: "not_found" }],
          done: ids.length,
          not_found: 1,
          forbidden: 0,
          conflict: 0,
        });
      },
    });
    const user = userEvent.setup();
    render(<DocumentsPage />);
    expect(await screen.findByText("Showing 3 of 3")).toBeInTheDocument();

    await user.click(screen.getByRole("button", { name: "failed 1" }));
    expect(await screen.findByText("Showing 1 of 1")).toBeInTheDocument();
    expect(calls.at(-1)?.url).toContain("status=failed");
    await user.click(screen.getByRole("button", { name: "All 3" }));
    expect(await screen.findByText("Showing 3 of 3")).toBeInTheDocument();

    await user.selectOptions(screen.getByLabelText("Sort"), "title");
    await waitFor(() => expect(calls.at(-1)?.url).toContain("sort=title"));
    await user.type(screen.getByLabelText("Type"), "PDF");
    await user.type(screen.getByLabelText("Tag"), "hr");
    await waitFor(() => expect(calls.at(-1)?.url).toMatch(/doc_type=pdf&tag=hr/));
    await user.clear(screen.getByLabelText("Type"));
    await user.clear(screen.getByLabelText("Tag"));
    await waitFor(() => expect(calls.at(-1)?.url).not.toContain("tag="));

    await user.click(await screen.findByRole("checkbox", { name: "Select d1.md" }));
    await user.click(screen.getByRole("checkbox", { name: "Select d3.md" }));
    await user.click(screen.getByRole("button", { name: "Delete selected" }));
    expect(calls.some((c) => c.method === "POST")).toBe(false); // not before the confirmation
    await user.click(screen.getByRole("button", { name: "Confirm delete" }));
    expect(await screen.findByRole("status")).toHaveTextContent("Deleted 2 of 3 documents; 1 not found.");
    const post = calls.find((c) => c.method === "POST");
    expect(JSON.parse(String(post?.init.body))).toEqual({ ids: ["d1", "d3"] });
    expect(await screen.findByText("Showing 1 of 1")).toBeInTheDocument();
    expect(screen.queryByText("1 selected")).toBeNull();
  });
});

import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { DocumentSummary } from "../api/types";
import { DocumentTable } from "./DocumentTable";

const DOC: DocumentSummary = {
  id: "d1",
  title: "Handbook",
  filename: "handbook.pdf",
  doc_type: "pdf",
  status: "failed",
  version: 2,
  chunk_count: 0,
  failure_reason: "encrypted PDF",
  updated_at: "2026-01-01T00:00:00Z",
  size_bytes: 2048,
};

describe("DocumentTable", () => {
  it("shows status, version, chunk count and failure; delete needs confirmation", async () => {
    const onDelete = vi.fn();
    const onRetry = vi.fn();
    const user = userEvent.setup();
    render(
      <DocumentTable documents={[DOC]} status="" query="" onFilter={() => {}} onDelete={onDelete} onRetry={onRetry} />,
    );
    expect(screen.getByText("encrypted PDF")).toBeInTheDocument();
    expect(screen.getByText("2.0 KB")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Delete handbook.pdf" }));
    expect(onDelete).not.toHaveBeenCalled();
    await user.click(screen.getByRole("button", { name: "Confirm delete" }));
    expect(onDelete).toHaveBeenCalledWith("d1");
    await user.click(screen.getByRole("button", { name: "Retry handbook.pdf" }));
    expect(onRetry).toHaveBeenCalledWith("d1");
  });

  it("reports filter changes", async () => {
    const onFilter = vi.fn();
    const user = userEvent.setup();
    render(<DocumentTable documents={[]} status="" query="" onFilter={onFilter} onDelete={() => {}} onRetry={() => {}} />);
    await user.selectOptions(screen.getByLabelText("Status"), "indexed");
    expect(onFilter).toHaveBeenCalledWith({ status: "indexed", query: "" });
    await user.type(screen.getByLabelText("Search"), "h");
    expect(onFilter).toHaveBeenLastCalledWith({ status: "", query: "h" });
  });

  it("shows status counts as chips that filter the list", async () => {
    const onFilter = vi.fn();
    const user = userEvent.setup();
    const counts = { queued: 2, parsing: 0, chunking: 0, embedding: 0, indexing: 0, indexed: 40, failed: 3 };
    render(
      <DocumentTable documents={[]} status="" query="q" counts={counts} onFilter={onFilter} onDelete={() => {}} onRetry={() => {}} />,
    );
    const chips = within(screen.getByRole("group", { name: "Filter by status" })).getAllByRole("button");
    expect(chips.map((c) => c.textContent)).toEqual(["All 45", "queued 2", "indexed 40", "failed 3"]);
    expect(chips[0]).toHaveAttribute("aria-pressed", "true");
    await user.click(screen.getByRole("button", { name: "failed 3" }));
    expect(onFilter).toHaveBeenCalledWith({ status: "failed", query: "q" });
  });

  it("acts on ticked rows only after a confirmation", async () => {
    const onBulk = vi.fn();
    const onSelect = vi.fn();
    const user = userEvent.setup();
    const other = { ...DOC, id: "d2", filename: "other.pdf", status: "indexed" as const };
    const props = { documents: [DOC, other], status: "", query: "", onFilter: () => {}, onDelete: () => {}, onRetry: () => {} };
    const { rerender } = render(<DocumentTable {...props} selected={new Set()} onSelect={onSelect} onBulk={onBulk} />);
    expect(screen.queryByRole("button", { name: "Delete selected" })).toBeNull();
    await user.click(screen.getByRole("checkbox", { name: "Select other.pdf" }));
    expect(onSelect).toHaveBeenLastCalledWith(["d2"], true);
    await user.click(screen.getByRole("checkbox", { name: "Select all shown" }));
    expect(onSelect).toHaveBeenLastCalledWith(["d1", "d2"], true);

    rerender(<DocumentTable {...props} selected={new Set(["d1", "d2"])} onSelect={onSelect} onBulk={onBulk} />);
    expect(screen.getByRole("checkbox", { name: "Select all shown" })).toBeChecked();
    expect(screen.getByText("2 selected")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Delete selected" }));
    expect(screen.getByText("Delete 2 documents?")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    expect(onBulk).not.toHaveBeenCalled();
    await user.click(screen.getByRole("button", { name: "Delete selected" }));
    await user.click(screen.getByRole("button", { name: "Confirm delete" }));
    expect(onBulk).toHaveBeenCalledWith("delete", ["d1", "d2"]);
    await user.click(screen.getByRole("button", { name: "Reindex selected" }));
    expect(screen.getByText("Reindex 2 documents?")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Confirm reindex" }));
    expect(onBulk).toHaveBeenLastCalledWith("reindex", ["d1", "d2"]);
    await user.click(screen.getByRole("button", { name: "Clear selection" }));
    expect(onSelect).toHaveBeenLastCalledWith(["d1", "d2"], false);
  });
});

import { render, screen } from "@testing-library/react";
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
});

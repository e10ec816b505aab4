import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { GapsPanel, sparkline } from "./GapsPanel";

const trend = Array.from({ length: 30 }, (_, i) => (i === 29 ? 3 : i === 10 ? 1 : 0));

describe("GapsPanel", () => {
  it("shows topics with counts, trend, examples, nearest documents and a CSV link", async () => {
    mockFetch({
      "GET /api/v1/review/gaps": () =>
        jsonResponse({
          days: 30,
          total: 5,
          topics: [
            { label: "doorbell / warranty", terms: ["doorbell", "warranty"], count: 4, reasons: { not_found: 4 }, trend, examples: ["Doorbell warranty?", "How long is the doorbell covered?"], documents: [{ document_id: "d1", title: "Warranty Policy", section_path: [], score: 0.4 }] },
            { label: "australia / price", terms: ["australia"], count: 1, reasons: { thumbs_down: 1 }, trend: Array(30).fill(0), examples: ["Price in Australia?"], documents: [] },
          ],
        }),
    });
    render(<GapsPanel />);
    const table = await screen.findByRole("table", { name: "Knowledge gap topics" });
    const rows = within(table).getAllByRole<HTMLTableRowElement>("row").slice(1);
    expect(rows[0]).toHaveTextContent("doorbell / warranty");
    expect(rows[0].cells[1]).toHaveTextContent("4");
    expect(rows[0].cells[2]).toHaveAttribute("aria-label", "last 7 days: 3");
    expect(within(rows[0]).getByText("How long is the doorbell covered?")).toBeInTheDocument();
    expect(rows[0].cells[4]).toHaveTextContent("Warranty Policy");
    expect(rows[1].cells[4]).toHaveTextContent("—");
    expect(screen.getByText(/5 question\(s\) in 2 topic\(s\)/)).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Download CSV" })).toHaveAttribute("href", "/api/v1/review/gaps?days=30&format=csv");
  });

  it("shows the error of a refused report", async () => {
    mockFetch({ "GET /api/v1/review/gaps": () => jsonResponse({ error: { code: "forbidden", message: "editors only" } }, 403) });
    render(<GapsPanel />);
    expect(await screen.findByRole("alert")).toHaveTextContent("editors only (forbidden)");
  });

  it("draws a sparkline scaled to the largest day", () => {
    expect(sparkline([0, 1, 2, 4])).toBe("▁▃▅█");
    expect(sparkline([0, 0])).toBe("▁▁");
  });
});

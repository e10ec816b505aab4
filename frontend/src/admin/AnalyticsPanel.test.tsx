import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { AnalyticsReport } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { AnalyticsPanel, share } from "./AnalyticsPanel";

const REPORT: AnalyticsReport = {
  days: 30,
  questions_per_day: [
    { day: "2026-11-29", questions: 3, tokens: 10 },
    { day: "2026-11-30", questions: 5, tokens: 20 },
  ],
  outcome_mix: { answered: 6, partial: 1, not_found: 1 },
  latency_ms: {
    first_token: { count: 8, p50: 120, p90: 300, p95: 350, p99: 400 },
    total: { count: 8, p50: 900, p90: 1500, p95: 1800, p99: 2100 },
  },
  most_cited: [{ document_id: "d1", title: "Troubleshooting Guide", answers: 5 }],
  never_cited: { days: 90, count: 1, documents: [{ document_id: "d2", title: "Old Policy", created_at: "2026-01-01T00:00:00Z" }] },
};

describe("AnalyticsPanel", () => {
  it("shows questions, outcome mix, latency percentiles, most- and never-cited documents", async () => {
    mockFetch({ "GET /api/v1/analytics": () => jsonResponse(REPORT) });
    render(<AnalyticsPanel />);
    expect(await screen.findByText(/8 question\(s\) in the last 30 days/)).toBeInTheDocument();
    const mix = within(screen.getByRole("table", { name: "Outcome mix" })).getAllByRole<HTMLTableRowElement>("row").slice(1);
    expect(mix.map((r) => r.textContent)).toEqual(["Answered675%", "Partial113%", "Not found113%"]);
    const latency = within(screen.getByRole("table", { name: "Latency" })).getAllByRole<HTMLTableRowElement>("row").slice(1);
    expect(latency[0].textContent).toBe("First token1203003504008");
    expect(latency[1].cells[4]).toHaveTextContent("2100");
    expect(within(screen.getByRole("list", { name: "Most-cited documents" })).getByText(/Troubleshooting Guide/)).toHaveTextContent("Troubleshooting Guide (5 answers)");
    expect(screen.getByRole("heading", { name: "Never cited in 90 days (1)" })).toBeInTheDocument();
    expect(within(screen.getByRole("list", { name: "Never-cited documents" })).getByText("Old Policy")).toBeInTheDocument();
  });

  it("shows the error when not allowed", async () => {
    mockFetch({ "GET /api/v1/analytics": () => jsonResponse({ error: { code: "forbidden", message: "admins only" } }, 403) });
    render(<AnalyticsPanel />);
    expect(await screen.findByRole("alert")).toHaveTextContent("admins only (forbidden)");
  });

  it("share", () => {
    expect(share(1, 4)).toBe("25%");
    expect(share(0, 0)).toBe("—");
  });
});

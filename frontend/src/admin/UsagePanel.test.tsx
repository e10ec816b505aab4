import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { UsageRow } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { UsagePanel } from "./UsagePanel";

const TODAY = new Date("2026-11-29T10:00:00Z"); // the chart covers 2026-10-31 .. 2026-11-29

const ann = { actor_kind: "user", actor_id: "u1", actor_name: "Ann Lee" } as const;
const bot = { actor_kind: "key", actor_id: "k1", actor_name: "support bot" } as const;

/** Newest first, as the server sends them. */
const ROWS: UsageRow[] = [
  { ...ann, day: "2026-11-29", requests: 7, prompt_tokens: 700, completion_tokens: 90 },
  { ...bot, day: "2026-11-29", requests: 3, prompt_tokens: 300, completion_tokens: 60 },
  { ...ann, day: "2026-11-20", requests: 2, prompt_tokens: 200, completion_tokens: 20 },
  { ...bot, day: "2026-10-31", requests: 1, prompt_tokens: 10, completion_tokens: 0 },
  { ...ann, day: "2026-10-30", requests: 50, prompt_tokens: 5000, completion_tokens: 500 }, // before the chart
];

function serve(rows: UsageRow[]) {
  return mockFetch({ "GET /api/v1/usage": () => jsonResponse({ usage: rows }) });
}

const days = (chart: Element) => Array.from(chart.querySelectorAll("g.usage-day"));
const titleOf = (chart: Element, day: string) => chart.querySelector(`g[data-day="${day}"] > title`)?.textContent;
const daysWithBars = (chart: Element) =>
  days(chart)
    .filter((g) => g.querySelector(".usage-bar"))
    .map((g) => g.getAttribute("data-day"));

describe("UsagePanel", () => {
  it("shows usage per actor, user or key, per day", async () => {
    serve([
      { ...ann, day: "2026-01-02", requests: 7, prompt_tokens: 700, completion_tokens: 90 },
      { ...bot, day: "2026-01-02", requests: 3, prompt_tokens: 300, completion_tokens: 60 },
    ]);
    render(<UsagePanel />);
    const annRow = (await screen.findByRole("cell", { name: "Ann Lee" })).closest("tr")!;
    expect(within(annRow).getByRole("cell", { name: "user" })).toBeInTheDocument();
    expect(within(annRow).getByRole("cell", { name: "700" })).toBeInTheDocument();
    const botRow = screen.getByRole("cell", { name: "support bot" }).closest("tr")!;
    expect(within(botRow).getByRole("cell", { name: "API key" })).toBeInTheDocument();
    expect(screen.queryByText("No usage recorded yet.")).toBeNull();
  });

  it("charts requests per day for the last 30 days, empty days included, above the table", async () => {
    serve(ROWS);
    render(<UsagePanel today={TODAY} />);
    const chart = await screen.findByRole("img", { name: "Requests per day, last 30 days, total 13" });
    expect(days(chart)).toHaveLength(30);
    expect(days(chart)[0].getAttribute("data-day")).toBe("2026-10-31");
    expect(days(chart)[29].getAttribute("data-day")).toBe("2026-11-29");
    expect(titleOf(chart, "2026-11-29")).toBe("2026-11-29: 10 requests");
    expect(titleOf(chart, "2026-10-31")).toBe("2026-10-31: 1 request");
    expect(titleOf(chart, "2026-11-28")).toBe("2026-11-28: 0 requests");
    expect(daysWithBars(chart)).toEqual(["2026-10-31", "2026-11-20", "2026-11-29"]);
    expect(chart.querySelectorAll(".usage-empty")).toHaveLength(27); // the other days show as empty, not skipped
    // The tallest day fills the chart; the others are scaled to it.
    const height = (day: string) => Number(chart.querySelector(`g[data-day="${day}"] .usage-bar`)!.getAttribute("height"));
    expect(height("2026-11-29")).toBe(100);
    expect(height("2026-11-20")).toBe(20);

    const totals = screen.getByRole("list", { name: "Totals per user or key, last 30 days" });
    expect(within(totals).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      "Ann Lee (user): 9 requests, 1,010 tokens",
      "support bot (API key): 4 requests, 370 tokens",
    ]);
    // The table still lists every row, the one before the chart's window too.
    expect(screen.getByRole("table", { name: "Usage per day" }).querySelectorAll("tbody tr")).toHaveLength(5);
    expect(chart.compareDocumentPosition(screen.getByRole("table", { name: "Usage per day" }))).toBe(
      Node.DOCUMENT_POSITION_FOLLOWING,
    );
  });

  it("charts one chosen actor and switches the metric to tokens", async () => {
    serve(ROWS);
    const user = userEvent.setup();
    render(<UsagePanel today={TODAY} />);
    await screen.findByRole("img", { name: "Requests per day, last 30 days, total 13" });
    const who = screen.getByLabelText("Who");
    expect(within(who).getAllByRole("option").map((o) => o.textContent)).toEqual([
      "All users and keys",
      "Ann Lee (user)",
      "support bot (API key)",
    ]);

    await user.selectOptions(who, "Ann Lee (user)");
    let chart = screen.getByRole("img", { name: "Requests per day for Ann Lee, last 30 days, total 9" });
    expect(days(chart)).toHaveLength(30);
    expect(daysWithBars(chart)).toEqual(["2026-11-20", "2026-11-29"]);
    expect(titleOf(chart, "2026-10-31")).toBe("2026-10-31: 0 requests");

    await user.selectOptions(screen.getByLabelText("Metric"), "Tokens (prompt + completion)");
    chart = screen.getByRole("img", { name: "Tokens per day for Ann Lee, last 30 days, total 1,010" });
    expect(titleOf(chart, "2026-11-29")).toBe("2026-11-29: 790 tokens");

    await user.selectOptions(who, "support bot (API key)");
    chart = screen.getByRole("img", { name: "Tokens per day for support bot, last 30 days, total 370" });
    expect(daysWithBars(chart)).toEqual(["2026-10-31", "2026-11-29"]);

    await user.selectOptions(who, "All users and keys");
    expect(screen.getByRole("img", { name: "Tokens per day, last 30 days, total 1,380" })).toBeInTheDocument();
  });

  it("shows an empty chart when all usage is older than 30 days, and no chart without usage", async () => {
    serve([ROWS[4]]);
    const { unmount } = render(<UsagePanel today={TODAY} />);
    const chart = await screen.findByRole("img", { name: "Requests per day, last 30 days, total 0" });
    expect(days(chart)).toHaveLength(30);
    expect(daysWithBars(chart)).toEqual([]);
    expect(screen.getByText("No usage in the last 30 days.")).toBeInTheDocument();
    unmount();

    const { calls } = serve([]);
    render(<UsagePanel today={TODAY} />);
    await waitFor(() => expect(calls).toHaveLength(1));
    await act(() => new Promise((resolve) => setTimeout(resolve, 0))); // let the empty answer arrive
    expect(screen.getByText("No usage recorded yet.")).toBeInTheDocument();
    expect(screen.queryByRole("img")).toBeNull();
  });
});

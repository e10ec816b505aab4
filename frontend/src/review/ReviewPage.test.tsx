import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { RegressionRun, ReviewItem, ReviewUpdate } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { parseFacts, ReviewPage, sectionLabel } from "./ReviewPage";

const ITEM: ReviewItem = {
  id: "r1",
  message_id: "m1",
  question: "Why is my camera offline at night?",
  answer: "From *Troubleshooting*: restart the router [1].",
  outcome: "answered",
  reasons: ["thumbs_down"],
  comment: "does not mention the night mode",
  sources: [
    { n: 1, chunk_id: "c1", document_id: "d1", title: "Troubleshooting", section_path: ["Cameras"], page_start: 2, page_end: 2 },
  ],
  hidden_sources: 1,
  status: "open",
  expected: { chunk_id: null, document_id: null, title: "", section_path: [], facts: [], document_missing: false },
  reviewed_at: null,
  created_at: "2026-11-30T10:00:00Z",
};

const MISSING: ReviewItem = { ...ITEM, id: "r2", question: "Doorbell warranty?", reasons: ["not_found"], comment: "", outcome: "not_found" };

const RUN: RegressionRun = {
  id: "run1",
  actor_name: "admin",
  started_at: "2026-11-30T11:00:00Z",
  finished_at: "2026-11-30T11:00:05Z",
  total: 2,
  passed: 1,
  failed: 1,
  previous_run_id: null,
  changes: { new: 2, same: 0, fixed: 0, broke: 0 },
  results: [
    {
      item_id: "r1", question: ITEM.question, passed: true, section_ok: true, facts_ok: true, document_missing_ok: null,
      missing_facts: [], expected_section: { document_id: "d1", title: "Troubleshooting", section_path: ["Night"] },
      cited_sections: [], outcome: "answered", answer: "", degraded: [], error: "", change: "new", latency_ms: 20,
    },
    {
      item_id: "r2", question: MISSING.question, passed: false, section_ok: null, facts_ok: false, document_missing_ok: null,
      missing_facts: ["two years"], expected_section: { document_id: null, title: "", section_path: [] },
      cited_sections: [], outcome: "partial", answer: "", degraded: [], error: "", change: "new", latency_ms: 30,
    },
  ],
};

function serve() {
  const updates: ReviewUpdate[] = [];
  const api = mockFetch({
    "GET /api/v1/review/items": () => jsonResponse({ items: [ITEM, MISSING] }),
    "GET /api/v1/review/items/r1/search": ({ url }) =>
      jsonResponse({
        query: new URL(url, "http://x").searchParams.get("q") ?? ITEM.question,
        results: [
          { chunk_id: "c9", document_id: "d1", title: "Troubleshooting", section_path: ["Night mode"], page_start: 4, text: "Night mode uses infrared.", score: 0.9 },
        ],
      }),
    "PUT /api/v1/review/items/r1": ({ init }) => {
      const body = JSON.parse(String(init.body)) as ReviewUpdate;
      updates.push(body);
      return jsonResponse({
        ...ITEM,
        status: body.status,
        expected: { chunk_id: body.chunk_id, document_id: "d1", title: "Troubleshooting", section_path: ["Night mode"], facts: body.facts, document_missing: body.document_missing },
      });
    },
    "PUT /api/v1/review/items/r2": () =>
      jsonResponse({ error: { code: "validation_error", message: "mark the section that answers, write expected facts, or mark the document missing" } }, 422),
    "POST /api/v1/review/runs": () => jsonResponse(RUN, 201),
    "GET /api/v1/review/gaps": () => jsonResponse({ days: 30, total: 0, topics: [] }),
  });
  return { ...api, updates };
}

describe("ReviewPage", () => {
  it("lists the queue and shows an item's question, answer, comment and visible sources", async () => {
    serve();
    const user = userEvent.setup();
    render(<ReviewPage canRun={false} />);
    await user.click(await screen.findByRole("button", { name: ITEM.question }));
    const detail = screen.getByRole("article", { name: "Review item" });
    expect(within(detail).getByText("does not mention the night mode")).toBeInTheDocument();
    expect(within(detail).getByText("Troubleshooting › Cameras")).toBeInTheDocument();
    expect(within(detail).getByText(/1 source\(s\) from documents you cannot see/)).toBeInTheDocument();
    expect(screen.getByText("not found")).toBeInTheDocument(); // the second item's reason
    expect(screen.queryByRole("button", { name: "Run regression" })).toBeNull(); // editors do not run
  });

  it("searches sections, marks one, writes facts and saves the review", async () => {
    const { updates, calls } = serve();
    const user = userEvent.setup();
    render(<ReviewPage canRun={false} />);
    await user.click(await screen.findByRole("button", { name: ITEM.question }));
    const search = screen.getByLabelText("Search");
    expect(search).toHaveValue(ITEM.question);
    await user.clear(search);
    await user.type(search, "night mode");
    await user.click(screen.getByRole("button", { name: "Search" }));
    expect(calls.at(-1)!.url).toBe("/api/v1/review/items/r1/search?q=night%20mode");
    await user.click(await screen.findByRole("button", { name: "Mark this section" }));
    expect(screen.getByText(/^Marked:/).closest("p")).toHaveTextContent("Marked: Troubleshooting › Night mode");
    await user.type(screen.getByLabelText("Expected answer facts (one per line)"), "infrared{enter}  {enter}clean the lens");
    await user.click(screen.getByRole("button", { name: "Save review" }));
    await screen.findByText("Saved.");
    expect(updates).toEqual([{ chunk_id: "c9", facts: ["infrared", "clean the lens"], document_missing: false, status: "reviewed" }]);
  });

  it("marks a document as missing without a section, and shows the server's error", async () => {
    const { updates } = serve();
    const user = userEvent.setup();
    render(<ReviewPage canRun={false} />);
    await user.click(await screen.findByRole("button", { name: ITEM.question }));
    await user.click(screen.getByRole("checkbox", { name: /Document missing/ }));
    await user.click(screen.getByRole("button", { name: "Save review" }));
    await screen.findByText("Saved.");
    expect(updates[0]).toEqual({ chunk_id: null, facts: [], document_missing: true, status: "reviewed" });

    await user.click(screen.getByRole("button", { name: MISSING.question }));
    await user.click(screen.getByRole("button", { name: "Save review" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("(validation_error)");
  });

  it("runs the regression set and shows per-item results", async () => {
    serve();
    const user = userEvent.setup();
    render(<ReviewPage canRun />);
    await user.click(await screen.findByRole("button", { name: "Run regression" }));
    await waitFor(() => expect(screen.getByText("1 of 2 passed (2 new).")).toBeInTheDocument());
    const rows = within(screen.getByRole("table", { name: "Regression results" })).getAllByRole<HTMLTableRowElement>("row").slice(1);
    expect(rows.map((r) => r.cells[0].textContent)).toEqual(["pass", "FAIL"]);
    expect(rows[1]).toHaveTextContent("(missing: two years)");
  });

  it("helpers", () => {
    expect(parseFacts(" a \n\n b\n")).toEqual(["a", "b"]);
    expect(sectionLabel("Guide", ["Guide", "Setup"])).toBe("Guide › Setup");
  });
});

import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { AuditPanel, summarizeDetail } from "./AuditPanel";

const ACTIONS = ["ask", "document.upload", "session.login", "document.delete", "session.login_failed"];

/** 120 events, ids 120 (newest) .. 1, cycling through ACTIONS. */
const ALL: AuditEvent[] = Array.from({ length: 120 }, (_, i) => {
  const id = 120 - i;
  return {
    id,
    created_at: new Date(Date.UTC(2026, 0, 1, 0, id)).toISOString(),
    actor_kind: id % 2 ? "user" : "key",
    actor_id: id % 2 ? "u1" : "k1",
    actor_name: id % 2 ? "Ann Lee" : "ingest bot",
    action: ACTIONS[id % ACTIONS.length],
    target: `doc-${id}`,
    detail: { filename: `file-${id}.md`, bytes: id * 10 },
  };
});

/** Serves /audit like the server: action prefix and actor id filters, newest first, `limit` per page, `before` as the cursor. */
function fakeAuditApi() {
  return mockFetch({
    "GET /api/v1/audit": ({ url }) => {
      const q = new URL(url, "http://x").searchParams;
      const limit = Number(q.get("limit"));
      const before = q.get("before") ? Number(q.get("before")) : Infinity;
      const actor = q.get("actor");
      const matching = ALL.filter(
        (e) => e.action.startsWith(q.get("action") ?? "") && (!actor || e.actor_id === actor) && e.id < before,
      );
      const page = matching.slice(0, limit);
      return jsonResponse({ events: page, next_before: matching.length > limit ? page.at(-1)!.id : null });
    },
  });
}

// Plain DOM queries: role queries over 120 rows are slow in jsdom.
const rows = () => Array.from(document.querySelectorAll<HTMLTableRowElement>(".audit-table tbody tr"));
const actionOf = (row: HTMLTableRowElement) => row.cells[2].textContent;
const actorOf = (row: HTMLTableRowElement) => row.cells[1].querySelector("button")?.textContent;

describe("AuditPanel", () => {
  it("shows time, actor, action, target and a detail summary", async () => {
    fakeAuditApi();
    render(<AuditPanel />);
    expect(screen.getByRole("heading", { name: "Audit log" })).toBeInTheDocument();
    const first = (await screen.findByText("doc-120")).closest("tr")!;
    expect(within(first).getByText("ingest bot")).toBeInTheDocument();
    expect(within(first).getByText("(API key)")).toBeInTheDocument();
    expect(within(first).getByText("ask")).toBeInTheDocument();
    expect(within(first).getByText("filename: file-120.md, bytes: 1200")).toBeInTheDocument();
    expect(rows()).toHaveLength(50);
  });

  it("loads older events with next_before until there are none", async () => {
    const { calls } = fakeAuditApi();
    const user = userEvent.setup();
    render(<AuditPanel />);
    await screen.findByText("doc-120");
    await user.click(screen.getByRole("button", { name: "Load more" }));
    await waitFor(() => expect(rows()).toHaveLength(100));
    expect(calls.at(-1)!.url).toBe("/api/v1/audit?limit=50&before=71");
    await user.click(screen.getByRole("button", { name: "Load more" }));
    await waitFor(() => expect(rows()).toHaveLength(120));
    expect(rows().at(-1)!.cells[3].textContent).toBe("doc-1");
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
  });

  it("filters by action prefix and pages within the filter", async () => {
    const { calls } = fakeAuditApi();
    const user = userEvent.setup();
    render(<AuditPanel />);
    await screen.findByText("doc-120");
    await user.selectOptions(screen.getByLabelText("Action"), "document.");
    await waitFor(() => expect(screen.queryByText("doc-120")).toBeNull());
    expect(calls.at(-1)!.url).toBe("/api/v1/audit?action=document.&limit=50");
    expect(rows()).toHaveLength(48); // 2 of every 5 events
    expect(rows().every((r) => actionOf(r)!.startsWith("document."))).toBe(true);
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();

    await user.selectOptions(screen.getByLabelText("Action"), "session.login_failed");
    await waitFor(() => expect(rows()).toHaveLength(24));
    expect(rows().every((r) => actionOf(r) === "session.login_failed")).toBe(true);
  });

  it("filters by the actor whose name is clicked, with the action filter and Load more, until the chip is removed", async () => {
    const { calls } = fakeAuditApi();
    const user = userEvent.setup();
    render(<AuditPanel />);
    await screen.findByText("doc-120");
    expect(screen.queryByRole("button", { name: /^Actor:/ })).toBeNull();

    await user.click(rows()[1].cells[1].querySelector("button")!); // event 119, by Ann Lee (u1)
    expect(calls.at(-1)!.url).toBe("/api/v1/audit?actor=u1&limit=50");
    await waitFor(() => expect(screen.queryByText("doc-120")).toBeNull());
    const chip = screen.getByRole("button", { name: "Actor: Ann Lee (remove filter)" });
    expect(chip).toHaveFocus();
    expect(rows()).toHaveLength(50);
    expect(rows().every((r) => actorOf(r) === "Ann Lee")).toBe(true);

    await user.click(screen.getByRole("button", { name: "Load more" }));
    await waitFor(() => expect(rows()).toHaveLength(60)); // Ann Lee has the 60 odd ids
    expect(calls.at(-1)!.url).toBe("/api/v1/audit?actor=u1&limit=50&before=21");
    expect(rows().every((r) => actorOf(r) === "Ann Lee")).toBe(true);

    await user.selectOptions(screen.getByLabelText("Action"), "document.");
    await waitFor(() => expect(rows()).toHaveLength(24));
    expect(calls.at(-1)!.url).toBe("/api/v1/audit?action=document.&actor=u1&limit=50");
    expect(rows().every((r) => actorOf(r) === "Ann Lee" && actionOf(r)!.startsWith("document."))).toBe(true);

    await user.click(screen.getByRole("button", { name: "Actor: Ann Lee (remove filter)" }));
    await waitFor(() => expect(rows()).toHaveLength(48));
    expect(calls.at(-1)!.url).toBe("/api/v1/audit?action=document.&limit=50");
    expect(screen.queryByRole("button", { name: /^Actor:/ })).toBeNull();
    expect(screen.getByLabelText("Action")).toHaveFocus();
    expect(rows().some((r) => actorOf(r) === "ingest bot")).toBe(true);
  });

  it("shows an actor without an id (system) as plain text", async () => {
    mockFetch({
      "GET /api/v1/audit": () =>
        jsonResponse({
          events: [{ ...ALL[0], actor_kind: "system", actor_id: null, actor_name: "system", target: "sweep" }],
          next_before: null,
        }),
    });
    render(<AuditPanel />);
    const row = (await screen.findByText("sweep")).closest("tr")!;
    expect(row.cells[1]).toHaveTextContent("system (system)");
    expect(within(row).queryByRole("button")).toBeNull();
  });

  it("shortens long details and keeps the full JSON in the tooltip", () => {
    const { short, full } = summarizeDetail({ question: "x".repeat(300) });
    expect(short).toHaveLength(120);
    expect(short.endsWith("…")).toBe(true);
    expect(JSON.parse(full)).toEqual({ question: "x".repeat(300) });
    expect(summarizeDetail({})).toEqual({ short: "", full: "" });
  });
});

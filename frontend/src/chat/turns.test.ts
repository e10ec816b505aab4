import { describe, expect, it } from "vitest";
import type { Citation } from "../api/types";
import { applyEvent, citedSources, newTurn, turnsFromMessages } from "./turns";

const cite = (n: number, sentence: string, supported: boolean): Citation => ({
  n,
  chunk_id: `c${n}`,
  document_id: "d",
  title: `Doc ${n}`,
  section: "S",
  page_start: null,
  page_end: null,
  sentence,
  supported,
});

describe("turns", () => {
  it("folds one citation entry per sentence into one entry per [n]", () => {
    const out = citedSources([cite(2, "a", true), cite(1, "a", true), cite(2, "b", false), cite(2, "c", true)]);
    expect(out.map((c) => [c.n, c.sentences, c.unsupported])).toEqual([
      [1, 1, 0],
      [2, 3, 1],
    ]);
  });

  it("keeps the error status when the server's final done carries only {error: true}", () => {
    let t = newTurn("q");
    t = applyEvent(t, { type: "token", data: { text: "Part" } });
    t = applyEvent(t, { type: "error", data: { code: "internal", message: "boom" } });
    t = applyEvent(t, { type: "done", data: { error: true } as never });
    expect(t).toMatchObject({ status: "error", error: "boom (internal)", answer: "Part", refused: false, degraded: false });
  });

  it("takes the final answer from done and marks refusals", () => {
    let t = newTurn("q");
    t = applyEvent(t, { type: "token", data: { text: "draft" } });
    t = applyEvent(t, {
      type: "done",
      data: { answer: "final", refused: true, degraded: false, usage: { prompt_tokens: 1, completion_tokens: 1 }, timings_ms: {} },
    });
    expect(t).toMatchObject({ status: "done", answer: "final", refused: true });
  });

  it("takes the outcome, what is missing, the answering section and the mode from done", () => {
    const unit = { label: "Guide › Offline", document_id: "d1", section_path: ["Guide", "Offline"], sources: [2, 1] };
    let t = newTurn("q");
    expect(t).toMatchObject({ outcome: null, missing: [], unit: null, mode: null });
    t = applyEvent(t, {
      type: "done",
      data: {
        answer: "From *Guide › Offline*:\n1. Plug it in [2]",
        refused: false,
        degraded: false,
        usage: { prompt_tokens: 1, completion_tokens: 1 },
        timings_ms: {},
        outcome: "partial",
        missing: ["2025"],
        unit,
        mode: "excerpt",
      },
    });
    expect(t).toMatchObject({ status: "done", outcome: "partial", missing: ["2025"], unit, mode: "excerpt" });
    // an older server, or the done after an error, sends none of them
    t = applyEvent(newTurn("q"), { type: "done", data: { error: true } as never });
    expect(t).toMatchObject({ outcome: null, missing: [], unit: null, mode: null });
  });

  it("rebuilds turns from stored messages", () => {
    const turns = turnsFromMessages([
      { id: "u1", role: "user", content: "Q1", created_at: "" },
      { id: "a1", role: "assistant", content: "A1", citations: null, created_at: "" },
      { id: "u2", role: "user", content: "Q2", created_at: "" },
    ]);
    expect(turns.map((t) => [t.question, t.answer, t.messageId])).toEqual([
      ["Q1", "A1", "a1"],
      ["Q2", "", null],
    ]);
  });
});

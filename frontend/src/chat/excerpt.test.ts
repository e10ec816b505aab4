import { describe, expect, it } from "vitest";
import type { Source } from "../api/types";
import {
  excerptQuotes,
  isExcerpt,
  passageBody,
  sectionLabel,
  sectionsOf,
  unitPassages,
  withoutMissingNote,
} from "./excerpt";

const source = (n: number, section_path: string[], text = `text ${n}`, document_id = "d1"): Source => ({
  n,
  chunk_id: `c${n}`,
  document_id,
  title: "Troubleshooting Guide",
  section_path,
  page_start: null,
  page_end: null,
  score: 1,
  text,
});

describe("excerpt answers", () => {
  it("splits the main quote from its 'From *label*:' line and each 'Also' point into its own quote", () => {
    expect(excerptQuotes("From *Guide › Offline*:\n1. Plug it in [1]\n2. Restart [1]")).toEqual([
      { label: "Guide › Offline", text: "1. Plug it in [1]\n2. Restart [1]" },
    ]);
    expect(
      excerptQuotes("From *Guide › Offline*:\nIt reconnects [1].\n\nAlso, from *FAQ › Wi-Fi*: Use 2.4 GHz [3].\n\nAlso: More [4]."),
    ).toEqual([
      { label: "Guide › Offline", text: "It reconnects [1]." },
      { label: "FAQ › Wi-Fi", text: "Use 2.4 GHz [3]." },
      { label: null, text: "More [4]." },
    ]);
    // no naming line: the whole text is the quote; later paragraphs continue it
    expect(excerptQuotes("Plain [1].\n\nMore [1].")).toEqual([{ label: null, text: "Plain [1].\n\nMore [1]." }]);
  });

  it("drops the closing paragraph of a partial answer, and nothing else", () => {
    const partial = "From *Plans › Prices*:\nPro costs 9 € [1].\n\nThe documents found do not say anything about “2025”.";
    expect(withoutMissingNote(partial)).toBe("From *Plans › Prices*:\nPro costs 9 € [1].");
    expect(withoutMissingNote("The documents found do not say anything about “x”.")).toBe(
      "The documents found do not say anything about “x”.",
    );
    expect(withoutMissingNote("A.\n\nB.")).toBe("A.\n\nB.");
  });

  it("is an excerpt when the extractive composer quoted it and it answers", () => {
    const unit = { label: "G › S", document_id: "d1", section_path: ["S"], sources: [1] };
    const base = { status: "done" as const, unit, outcome: "answered" as const, answer: "From *G › S*:\nX [1].", degradedReasons: [] };
    expect(isExcerpt({ ...base, mode: "excerpt" })).toBe(true);
    expect(isExcerpt({ ...base, mode: "excerpt", outcome: "partial" })).toBe(true);
    expect(isExcerpt({ ...base, mode: "generated" })).toBe(false);
    expect(isExcerpt({ ...base, mode: "excerpt", outcome: "not_found" })).toBe(false);
    expect(isExcerpt({ ...base, mode: "excerpt", unit: null })).toBe(false);
    expect(isExcerpt({ ...base, mode: "excerpt", status: "streaming" })).toBe(false);
    expect(isExcerpt({ ...base, mode: null, outcome: null })).toBe(false); // stored answers, older servers
    // the model was unavailable and the extractive fallback answered in its place
    expect(isExcerpt({ ...base, mode: "generated", degradedReasons: ["llm_fallback"] })).toBe(true);
    expect(isExcerpt({ ...base, mode: "generated", degradedReasons: ["llm_fallback"], answer: "Prose [1]." })).toBe(false);
  });

  it("takes the unit's passages in the unit's order and drops their heading-path line", () => {
    const sources = [source(1, ["A"]), source(2, ["Guide", "Offline"]), source(3, ["Guide", "Offline"])];
    const unit = { label: "x", document_id: "d1", section_path: ["Guide", "Offline"], sources: [3, 2, 9] };
    expect(unitPassages(unit, sources).map((s) => s.n)).toEqual([3, 2]);
    expect(passageBody(source(1, ["Guide", "Offline"], "Guide > Offline\n1. Plug\n2. Wait"))).toBe("1. Plug\n2. Wait");
    expect(passageBody(source(1, ["Guide"], "Not the crumb\nBody"))).toBe("Not the crumb\nBody");
  });

  it("names sections like the server and lists each nearest section once", () => {
    expect(sectionLabel("Troubleshooting Guide", ["Troubleshooting Guide", "A device shows as offline"])).toBe(
      "Troubleshooting Guide › A device shows as offline",
    );
    expect(sectionLabel("FAQ", [])).toBe("FAQ");
    expect(sectionsOf([source(1, ["Offline"]), source(2, ["Offline"]), source(3, ["Pairing"]), source(4, ["Offline"], "t", "d2")])).toEqual([
      { label: "Troubleshooting Guide › Offline", chunkId: "c1" },
      { label: "Troubleshooting Guide › Pairing", chunkId: "c3" },
      { label: "Troubleshooting Guide › Offline", chunkId: "c4" },
    ]);
  });
});

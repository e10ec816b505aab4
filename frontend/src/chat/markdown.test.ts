import { describe, expect, it } from "vitest";
import { parseInline, parseMarkdown } from "./markdown";

describe("parseInline", () => {
  it("finds bold, code and citation markers, leaving the rest as text", () => {
    expect(parseInline("Use **the blue key** [1] and `calibrate --now` [2].")).toEqual([
      { t: "text", s: "Use " },
      { t: "strong", children: [{ t: "text", s: "the blue key" }] },
      { t: "text", s: " " },
      { t: "cite", n: 1, raw: "[1]" },
      { t: "text", s: " and " },
      { t: "code", s: "calibrate --now" },
      { t: "text", s: " " },
      { t: "cite", n: 2, raw: "[2]" },
      { t: "text", s: "." },
    ]);
  });

  it("keeps markers inside code literal, finds them inside bold, and leaves unfinished markup as text", () => {
    expect(parseInline("`a[1]`")).toEqual([{ t: "code", s: "a[1]" }]);
    expect(parseInline("**42 days [3]**")).toEqual([
      { t: "strong", children: [{ t: "text", s: "42 days " }, { t: "cite", n: 3, raw: "[3]" }] },
    ]);
    expect(parseInline("**still stream")).toEqual([{ t: "text", s: "**still stream" }]);
    expect(parseInline("2 ** 3 and a * b")).toEqual([{ t: "text", s: "2 ** 3 and a * b" }]);
  });

  it("reads *italics* (the section an excerpt answer names), keeping stray stars literal", () => {
    expect(parseInline("From *Guide › Offline*:")).toEqual([
      { t: "text", s: "From " },
      { t: "em", children: [{ t: "text", s: "Guide › Offline" }] },
      { t: "text", s: ":" },
    ]);
    expect(parseInline("*A*; *B [2]*")).toEqual([
      { t: "em", children: [{ t: "text", s: "A" }] },
      { t: "text", s: "; " },
      { t: "em", children: [{ t: "text", s: "B " }, { t: "cite", n: 2, raw: "[2]" }] },
    ]);
    expect(parseInline("**bold** and *it*")).toEqual([
      { t: "strong", children: [{ t: "text", s: "bold" }] },
      { t: "text", s: " and " },
      { t: "em", children: [{ t: "text", s: "it" }] },
    ]);
    for (const literal of ["2 * 3 * 4", "*still stream", "a *b * c", "**", "* item"]) {
      expect(parseInline(literal)).toEqual([{ t: "text", s: literal }]);
    }
  });
});

describe("parseMarkdown", () => {
  it("splits paragraphs on blank lines and keeps single newlines as breaks", () => {
    expect(parseMarkdown("One\ntwo\n\nThree")).toEqual([
      { t: "p", content: [{ t: "text", s: "One" }, { t: "br" }, { t: "text", s: "two" }] },
      { t: "p", content: [{ t: "text", s: "Three" }] },
    ]);
  });

  it("reads bullet and numbered lists, with continuation lines and a start number", () => {
    expect(parseMarkdown("Steps:\n3. Open [1]\n4) Close\n   firmly\n\n- a\n* b")).toEqual([
      { t: "p", content: [{ t: "text", s: "Steps:" }] },
      {
        t: "ol",
        start: 3,
        items: [
          [{ t: "text", s: "Open " }, { t: "cite", n: 1, raw: "[1]" }],
          [{ t: "text", s: "Close" }, { t: "br" }, { t: "text", s: "firmly" }],
        ],
      },
      { t: "ul", items: [[{ t: "text", s: "a" }], [{ t: "text", s: "b" }]] },
    ]);
  });

  it("switches list kind without a blank line and shows headings as bold paragraphs", () => {
    expect(parseMarkdown("## Summary\n- a\n1. b").map((b) => b.t)).toEqual(["p", "ul", "ol"]);
    expect(parseMarkdown("## Summary")[0]).toEqual({
      t: "p",
      content: [{ t: "strong", children: [{ t: "text", s: "Summary" }] }],
    });
    expect(parseMarkdown("")).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { createSseParser } from "./sse";

function feed(pieces: string[]) {
  const p = createSseParser();
  return pieces.flatMap((x) => p.push(x));
}

describe("createSseParser", () => {
  it("parses complete events", () => {
    expect(feed(['event: token\ndata: {"text":"hi"}\n\nevent: done\ndata: {}\n\n'])).toEqual([
      { event: "token", data: '{"text":"hi"}' },
      { event: "done", data: "{}" },
    ]);
  });

  it("joins an event split across chunks at any point", () => {
    const raw = 'event: token\ndata: {"text":"héllo"}\n\nevent: meta\ndata: {"a":1}\n\n';
    for (let cut = 1; cut < raw.length; cut++) {
      expect(feed([raw.slice(0, cut), raw.slice(cut)])).toEqual([
        { event: "token", data: '{"text":"héllo"}' },
        { event: "meta", data: '{"a":1}' },
      ]);
    }
  });

  it("handles one character at a time", () => {
    const raw = "event: a\ndata: x\n\n";
    expect(feed(raw.split(""))).toEqual([{ event: "a", data: "x" }]);
  });

  it("ignores heartbeat comments, including between events and inside one", () => {
    expect(feed([": ping\n\n", "event: token\n: ping\ndata: 1\n\n", ": ping\n\n"])).toEqual([
      { event: "token", data: "1" },
    ]);
  });

  it("joins multi-line data with newlines", () => {
    expect(feed(["event: token\ndata: line one\ndata: line two\ndata:\n\n"])).toEqual([
      { event: "token", data: "line one\nline two\n" },
    ]);
  });

  it("accepts CRLF and CR line endings, also when CRLF is split", () => {
    expect(feed(["event: a\r", "\ndata: 1\r\n\r", "\n", "event: b\rdata: 2\r\r", ": next"])).toEqual([
      { event: "a", data: "1" },
      { event: "b", data: "2" },
    ]);
  });

  it("strips only one leading space and keeps colons in values", () => {
    expect(feed(['data:  {"u":"http://x"}\n\n'])).toEqual([{ event: "message", data: ' {"u":"http://x"}' }]);
  });

  it("does not dispatch an event without data, nor an unterminated one", () => {
    const p = createSseParser();
    expect(p.push("event: lonely\n\nevent: token\ndata: partial\n")).toEqual([]);
    p.finish();
    expect(p.push("\n")).toEqual([]);
  });

  it("keeps the last id", () => {
    expect(feed(["id: 7\nevent: a\ndata: x\n\n"])).toEqual([{ event: "a", data: "x", id: "7" }]);
  });
});

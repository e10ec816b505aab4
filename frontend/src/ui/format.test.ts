import { describe, expect, it } from "vitest";
import { formatDuration, formatTime } from "./format";

describe("format", () => {
  it("formats durations", () => {
    expect(formatDuration(28.1)).toBe("28 ms");
    expect(formatDuration(1262.3)).toBe("1.3 s");
  });
  it("formats missing and unparsable times", () => {
    expect(formatTime(null)).toBe("never");
    expect(formatTime("not a date")).toBe("not a date");
    expect(formatTime(0)).not.toBe("never");
  });
});

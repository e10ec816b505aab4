import { describe, expect, it } from "vitest";
import { fileFractions, percent } from "./progress";

describe("fileFractions", () => {
  it("fills the files in order from the bytes of the whole body", () => {
    // two files, 100 and 300 bytes, in a 500-byte body (framing spread in proportion)
    expect(fileFractions([100, 300], 0, 500)).toEqual([0, 0]);
    expect(fileFractions([100, 300], 50, 500)).toEqual([0.4, 0]);
    expect(fileFractions([100, 300], 250, 500)).toEqual([1, 1 / 3]);
    expect(fileFractions([100, 300], 500, 500)).toEqual([1, 1]);
  });

  it("copes with empty files and an unknown total", () => {
    expect(fileFractions([0, 10], 1, 20)).toEqual([1, 0.05]);
    expect(fileFractions([0], 0, 20)).toEqual([0]);
    expect(fileFractions([10], 5, 0)).toEqual([0]);
  });

  it("rounds percentages down so 100% means all sent", () => {
    expect(percent(0.999)).toBe(99);
    expect(percent(1)).toBe(100);
  });
});

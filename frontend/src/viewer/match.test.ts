import { coverage, matchPassage, splitAround, words } from "./match";

describe("words", () => {
  it("lower-cases, normalises and splits on anything but letters and digits", () => {
    expect(words("  Hold the\n\tRESET-button   (10 s).  Ünïcode ﬁne")).toEqual([
      "hold", "the", "reset", "button", "10", "s", "ünïcode", "fine",
    ]);
  });
});

describe("matchPassage", () => {
  const page = [
    "Kestrel Hub manual",
    "Resetting the hub",
    "To reset the hub, hold the button",
    "for ten seconds until the light",
    "turns amber. Then pair it again.",
    "Warranty",
    "The warranty lasts two years.",
  ];

  it("marks the items the passage runs across, whatever the line breaks and spacing", () => {
    const passage = "To reset the hub,   hold the button for ten seconds\nuntil the light turns amber.";
    expect([...matchPassage(page, passage)].sort()).toEqual([2, 3, 4]);
  });

  it("keeps the densest run when a phrase repeats elsewhere on the page", () => {
    const items = ["the hub restarts", "unrelated words here and there and more filler", "x", "y", "z", "w", "v",
      "To reset the hub restarts nothing", "hold the button for ten seconds"];
    expect([...matchPassage(items, "To reset the hub restarts nothing: hold the button for ten seconds")].sort())
      .toEqual([7, 8]);
  });

  it("tolerates a word the PDF text spells differently inside the passage", () => {
    const items = ["hold the button for 10 seconds until the light turns amber"];
    expect(matchPassage(items, "hold the button for ten seconds until the light turns amber")).toEqual(new Set([0]));
  });

  it("finds nothing for a passage that is not on the page, or an empty one", () => {
    expect(matchPassage(page, "Billing happens on the first day of the month").size).toBe(0);
    expect(matchPassage(page, "   ").size).toBe(0);
    expect(matchPassage([], "anything at all").size).toBe(0);
  });

  it("matches very short passages by their words", () => {
    expect(matchPassage(page, "Warranty")).toEqual(new Set([5, 6]));
    expect(matchPassage(page, "two years")).toEqual(new Set([6]));
  });

  it("reports how much of the passage the highlight covers", () => {
    const passage = "To reset the hub, hold the button for ten seconds until the light turns amber.";
    const chosen = matchPassage(page, passage);
    expect(coverage(page, chosen, passage)).toBe(1);
    expect(coverage(page, new Set([2]), passage)).toBeCloseTo(7 / 15, 5);
    expect(coverage(page, new Set(), passage)).toBe(0);
  });
});

describe("splitAround", () => {
  it("cuts a text around the passage and clamps offsets", () => {
    expect(splitAround("abcdef", 2, 4)).toEqual(["ab", "cd", "ef"]);
    expect(splitAround("abc", -5, 99)).toEqual(["", "abc", ""]);
    expect(splitAround("abc", 2, 1)).toEqual(["ab", "", "c"]);
  });
});

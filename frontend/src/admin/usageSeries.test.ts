import { describe, expect, it } from "vitest";
import type { UsageRow } from "../api/types";
import { actorKey, actorTotals, dailySeries, lastDays, utcDay } from "./usageSeries";

const row = (over: Partial<UsageRow>): UsageRow => ({
  actor_kind: "user",
  actor_id: "u1",
  actor_name: "Ann Lee",
  day: "2026-03-01",
  requests: 1,
  prompt_tokens: 10,
  completion_tokens: 2,
  ...over,
});

describe("usageSeries", () => {
  it("counts UTC days back from today's UTC day, oldest first", () => {
    // 23:30 UTC: still 1 March in UTC whatever the local time zone says.
    const days = lastDays(new Date("2024-03-01T23:30:00Z"), 30);
    expect(days).toHaveLength(30);
    expect(days.at(-1)).toBe("2024-03-01");
    expect(days.at(-2)).toBe("2024-02-29"); // leap year
    expect(days[0]).toBe("2024-02-01");
    expect(new Set(days).size).toBe(30);
    expect(lastDays(new Date("2027-01-02T00:00:00Z"), 3)).toEqual(["2026-12-31", "2027-01-01", "2027-01-02"]);
    expect(lastDays(new Date("2026-03-30T12:00:00Z"), 2)).toEqual(["2026-03-29", "2026-03-30"]); // a DST change in Europe
    expect(utcDay(new Date("2026-11-29T00:00:00+02:00"))).toBe("2026-11-28");
  });

  it("sums a metric per day over all actors or one, with 0 for days without rows", () => {
    const days = ["2026-03-01", "2026-03-02", "2026-03-03"];
    const rows = [
      row({ day: "2026-03-03", requests: 2, prompt_tokens: 100, completion_tokens: 20 }),
      row({ day: "2026-03-03", actor_kind: "key", actor_id: "k1", actor_name: "bot", requests: 5, prompt_tokens: 50, completion_tokens: 5 }),
      row({ day: "2026-03-01", requests: 1, prompt_tokens: 10, completion_tokens: 1 }),
      row({ day: "2026-02-28", requests: 9 }), // before the window
    ];
    expect(dailySeries(rows, days, "requests")).toEqual([
      { day: "2026-03-01", value: 1 },
      { day: "2026-03-02", value: 0 },
      { day: "2026-03-03", value: 7 },
    ]);
    expect(dailySeries(rows, days, "tokens").map((p) => p.value)).toEqual([11, 0, 175]);
    expect(dailySeries(rows, days, "requests", "key:k1").map((p) => p.value)).toEqual([0, 0, 5]);
    expect(dailySeries(rows, days, "tokens", "user:u1").map((p) => p.value)).toEqual([11, 0, 120]);
  });

  it("totals requests and tokens per actor inside the window, a user and a key of the same name apart", () => {
    const days = ["2026-03-01", "2026-03-02"];
    const rows = [
      row({ day: "2026-03-01", requests: 1, prompt_tokens: 10, completion_tokens: 1 }),
      row({ day: "2026-03-02", requests: 2, prompt_tokens: 20, completion_tokens: 2 }),
      row({ day: "2026-03-02", actor_kind: "key", actor_id: "u1", requests: 4, prompt_tokens: 1, completion_tokens: 1 }),
      row({ day: "2026-01-01", requests: 100 }),
    ];
    expect(actorKey(rows[2])).toBe("key:u1");
    expect(actorTotals(rows, days)).toEqual([
      { key: "key:u1", kind: "key", name: "Ann Lee", requests: 4, tokens: 2 },
      { key: "user:u1", kind: "user", name: "Ann Lee", requests: 3, tokens: 33 },
    ]);
    expect(actorTotals(rows, ["2026-02-01"])).toEqual([]);
  });
});

// Usage rows (one per actor per UTC day, day as "YYYY-MM-DD") turned into a per-day series and per-actor totals.
import type { ActorKind, UsageRow } from "../api/types";

export type UsageMetric = "requests" | "tokens";

const DAY_MS = 24 * 60 * 60 * 1000;

/** The "YYYY-MM-DD" UTC day of a moment. */
export function utcDay(moment: Date): string {
  return moment.toISOString().slice(0, 10);
}

/** The `count` UTC days that end with `today`'s UTC day, oldest first. */
export function lastDays(today: Date, count: number): string[] {
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  // UTC has no daylight saving time, so every day is exactly DAY_MS long.
  return Array.from({ length: count }, (_, i) => utcDay(new Date(end - (count - 1 - i) * DAY_MS)));
}

/** Identifies an actor across rows; a user and a key may share a name (and, in principle, an id). */
export function actorKey(row: Pick<UsageRow, "actor_kind" | "actor_id">): string {
  return `${row.actor_kind}:${row.actor_id}`;
}

/** A row's value for the metric: its requests, or its prompt plus completion tokens. */
export function metricValue(row: UsageRow, metric: UsageMetric): number {
  return metric === "requests" ? row.requests : row.prompt_tokens + row.completion_tokens;
}

/**
 * One point per day in `days` (in that order), summing the metric over all actors or, with `actor` (an actorKey),
 * over that actor only. Days without rows are 0; rows on other days are ignored.
 */
export function dailySeries(
  rows: UsageRow[],
  days: string[],
  metric: UsageMetric,
  actor?: string | null,
): { day: string; value: number }[] {
  const byDay = new Map(days.map((d) => [d, 0]));
  for (const row of rows) {
    const sum = byDay.get(row.day);
    if (sum === undefined || (actor && actorKey(row) !== actor)) continue;
    byDay.set(row.day, sum + metricValue(row, metric));
  }
  return days.map((day) => ({ day, value: byDay.get(day)! }));
}

export interface ActorTotal {
  key: string;
  kind: ActorKind;
  name: string;
  requests: number;
  tokens: number;
}

/** Requests and tokens per actor over the rows whose day is in `days`; most requests first, then by name. */
export function actorTotals(rows: UsageRow[], days: string[]): ActorTotal[] {
  const window = new Set(days);
  const totals = new Map<string, ActorTotal>();
  for (const row of rows) {
    if (!window.has(row.day)) continue;
    const key = actorKey(row);
    const total = totals.get(key) ?? { key, kind: row.actor_kind, name: row.actor_name, requests: 0, tokens: 0 };
    total.requests += row.requests;
    total.tokens += metricValue(row, "tokens");
    totals.set(key, total);
  }
  return [...totals.values()].sort((a, b) => b.requests - a.requests || a.name.localeCompare(b.name));
}

import { useEffect, useMemo, useState } from "react";
import { errorMessage, getUsage } from "../api/client";
import type { ActorKind, UsageRow } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { Table } from "../ui/Table";
import { countOf, formatCount, UsageChart } from "./UsageChart";
import { actorTotals, dailySeries, lastDays, type UsageMetric } from "./usageSeries";

/** Days in the chart, ending today (UTC). */
export const CHART_DAYS = 30;

const KIND: Record<ActorKind, string> = { user: "user", key: "API key", system: "system" };

/**
 * Requests and tokens per user or key: a chart of the last 30 days (all actors or one, requests or tokens), totals per
 * actor, and a table with a row per actor per day. `today` is for tests; it defaults to now.
 */
export function UsagePanel({ today }: { today?: Date } = {}) {
  const [rows, setRows] = useState<UsageRow[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [actor, setActor] = useState(""); // an actorKey, or "" for all actors
  const [metric, setMetric] = useState<UsageMetric>("requests");

  const days = useMemo(() => lastDays(today ?? new Date(), CHART_DAYS), [today]);
  const totals = useMemo(() => actorTotals(rows, days), [rows, days]);
  const series = useMemo(() => dailySeries(rows, days, metric, actor), [rows, days, metric, actor]);
  const chosen = totals.find((t) => t.key === actor);
  const total = series.reduce((sum, p) => sum + p.value, 0);
  const metricLabel = metric === "requests" ? "Requests" : "Tokens";
  const chartLabel = `${metricLabel} per day${chosen ? ` for ${chosen.name}` : ""}, last ${CHART_DAYS} days, total ${formatCount(total)}`;

  useEffect(() => {
    getUsage().then(setRows, (e: unknown) => setError(errorMessage(e)));
  }, []);

  return (
    <section aria-labelledby="usage-heading">
      <h2 id="usage-heading">Usage</h2>
      <ErrorAlert message={error} />
      {rows.length > 0 && (
        <div className="usage-overview">
          <div className="filters">
            <label htmlFor="usage-who">Who</label>
            <select id="usage-who" value={actor} onChange={(e) => setActor(e.target.value)}>
              <option value="">All users and keys</option>
              {totals.map((t) => (
                <option key={t.key} value={t.key}>
                  {t.name} ({KIND[t.kind] ?? t.kind})
                </option>
              ))}
            </select>
            <label htmlFor="usage-metric">Metric</label>
            <select id="usage-metric" value={metric} onChange={(e) => setMetric(e.target.value as UsageMetric)}>
              <option value="requests">Requests</option>
              <option value="tokens">Tokens (prompt + completion)</option>
            </select>
          </div>
          <UsageChart series={series} unit={metric === "requests" ? "request" : "token"} label={chartLabel} />
          {totals.length > 0 ? (
            <ul className="usage-totals" aria-label={`Totals per user or key, last ${CHART_DAYS} days`}>
              {totals.map((t) => (
                <li key={t.key}>
                  {t.name} <span className="muted">({KIND[t.kind] ?? t.kind})</span>: {countOf(t.requests, "request")},{" "}
                  {countOf(t.tokens, "token")}
                </li>
              ))}
            </ul>
          ) : (
            <p className="muted">No usage in the last {CHART_DAYS} days.</p>
          )}
        </div>
      )}
      <Table label="Usage per day" columns={["Day", "Who", "Kind", "Requests", "Prompt tokens", "Completion tokens"]}>
        {rows.map((r) => (
          <tr key={`${r.actor_kind}-${r.actor_id}-${r.day}`}>
            <td>{r.day}</td>
            <td>{r.actor_name}</td>
            <td>{KIND[r.actor_kind] ?? r.actor_kind}</td>
            <td className="num">{r.requests}</td>
            <td className="num">{r.prompt_tokens}</td>
            <td className="num">{r.completion_tokens}</td>
          </tr>
        ))}
      </Table>
      {rows.length === 0 && !error && <p className="muted">No usage recorded yet.</p>}
    </section>
  );
}

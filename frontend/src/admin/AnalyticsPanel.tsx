import { useEffect, useState } from "react";
import { errorMessage, getAnalytics } from "../api/client";
import type { AnalyticsReport } from "../api/types";
import { sparkline } from "../review/GapsPanel";
import { ErrorAlert } from "../ui/ErrorAlert";
import { Table } from "../ui/Table";

const OUTCOME_LABELS: Record<string, string> = {
  answered: "Answered",
  partial: "Partial",
  not_found: "Not found",
  unknown: "Unknown",
};

/** "12%" of a total, or "—" when there is nothing. */
export const share = (n: number, total: number) => (total > 0 ? `${Math.round((n / total) * 100)}%` : "—");

/**
 * Usage analytics for admins, last 30 days: questions per day, outcome mix, first-token and total latency
 * percentiles, the most-cited documents and the documents no answer cited in 90 days.
 */
export function AnalyticsPanel() {
  const [report, setReport] = useState<AnalyticsReport | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    getAnalytics().then(setReport, (e: unknown) => setError(errorMessage(e)));
  }, []);

  const totalAnswers = report ? Object.values(report.outcome_mix).reduce((a, b) => a + b, 0) : 0;
  const questions = report ? report.questions_per_day.reduce((a, d) => a + d.questions, 0) : 0;
  return (
    <section aria-labelledby="analytics-heading">
      <h2 id="analytics-heading">Analytics</h2>
      <ErrorAlert message={error} />
      {report && (
        <>
          <p>
            {questions} question(s) in the last {report.days} days{" "}
            <span aria-hidden="true">{sparkline(report.questions_per_day.map((d) => d.questions))}</span>
          </p>
          <Table label="Outcome mix" className="outcome-table" columns={["Outcome", "Answers", "Share"]}>
            {Object.entries(report.outcome_mix).map(([k, n]) => (
              <tr key={k}>
                <td>{OUTCOME_LABELS[k] ?? k}</td>
                <td>{n}</td>
                <td>{share(n, totalAnswers)}</td>
              </tr>
            ))}
          </Table>
          <Table label="Latency" className="latency-table" columns={["Latency (ms)", "p50", "p90", "p95", "p99", "Answers"]}>
            {(["first_token", "total"] as const).map((k) => {
              const p = report.latency_ms[k];
              return (
                <tr key={k}>
                  <td>{k === "first_token" ? "First token" : "Total"}</td>
                  <td>{p.p50}</td>
                  <td>{p.p90}</td>
                  <td>{p.p95}</td>
                  <td>{p.p99}</td>
                  <td>{p.count}</td>
                </tr>
              );
            })}
          </Table>
          <h3>Most-cited documents</h3>
          {report.most_cited.length === 0 ? (
            <p className="muted">No citations yet.</p>
          ) : (
            <ol aria-label="Most-cited documents">
              {report.most_cited.map((d) => (
                <li key={d.document_id}>
                  {d.title} <span className="muted">({d.answers} answers)</span>
                </li>
              ))}
            </ol>
          )}
          <h3>Never cited in {report.never_cited.days} days ({report.never_cited.count})</h3>
          {report.never_cited.count === 0 ? (
            <p className="muted">Every document was cited.</p>
          ) : (
            <ul aria-label="Never-cited documents">
              {report.never_cited.documents.map((d) => (
                <li key={d.document_id}>{d.title}</li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}

import { useEffect, useState } from "react";
import { errorMessage, gapsCsvUrl, getGaps } from "../api/client";
import type { GapsReport } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { Table } from "../ui/Table";

/** "▁▂▅" style sparkline of a daily series (text, so it needs no chart code). */
export function sparkline(values: number[]): string {
  const bars = "▁▂▃▄▅▆▇█";
  const max = Math.max(0, ...values);
  if (max === 0) return bars[0].repeat(values.length);
  return values.map((v) => bars[Math.min(bars.length - 1, Math.round((v / max) * (bars.length - 1)))]).join("");
}

/**
 * Knowledge gaps for editors: questions that ended not found / partial or got a thumbs-down in the last 30 days,
 * grouped into topics (labelled by their top terms), with counts, a daily trend, example questions and the nearest
 * documents; downloadable as CSV.
 */
export function GapsPanel() {
  const [report, setReport] = useState<GapsReport | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    getGaps().then(setReport, (e: unknown) => setError(errorMessage(e)));
  }, []);

  return (
    <section aria-labelledby="gaps-heading">
      <h2 id="gaps-heading">Knowledge gaps</h2>
      <ErrorAlert message={error} />
      {report && (
        <p className="muted">
          {report.total} question(s) in {report.topics.length} topic(s), last {report.days} days.{" "}
          <a href={gapsCsvUrl(report.days)} download="knowledge-gaps.csv">
            Download CSV
          </a>
        </p>
      )}
      {report && report.topics.length > 0 && (
        <Table
          label="Knowledge gap topics"
          className="gaps-table"
          columns={["Topic", "Questions", "Trend (30 days)", "Examples", "Nearest documents"]}
        >
          {report.topics.map((t) => (
            <tr key={t.label}>
              <td>{t.label}</td>
              <td>{t.count}</td>
              <td aria-label={`last 7 days: ${t.trend.slice(-7).reduce((a, b) => a + b, 0)}`}>
                <span aria-hidden="true">{sparkline(t.trend)}</span>
              </td>
              <td className="wrap">
                <ul>
                  {t.examples.map((q) => (
                    <li key={q}>{q}</li>
                  ))}
                </ul>
              </td>
              <td className="wrap">{t.documents.map((d) => d.title).join("; ") || "—"}</td>
            </tr>
          ))}
        </Table>
      )}
      {report && report.topics.length === 0 && <p className="muted">No gaps in this period.</p>}
    </section>
  );
}

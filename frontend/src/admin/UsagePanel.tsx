import { useEffect, useState } from "react";
import { errorMessage, getUsage } from "../api/client";
import type { UsageRow } from "../api/types";

/** Requests and tokens per key per day. */
export function UsagePanel() {
  const [rows, setRows] = useState<UsageRow[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    getUsage().then(setRows, (e: unknown) => setError(errorMessage(e)));
  }, []);

  return (
    <section aria-label="Usage">
      <h2>Usage</h2>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Key</th>
            <th scope="col">Requests</th>
            <th scope="col">Prompt tokens</th>
            <th scope="col">Completion tokens</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={`${r.key_id}-${r.day}`}>
              <td>{r.day}</td>
              <td>{r.key_name}</td>
              <td>{r.requests}</td>
              <td>{r.prompt_tokens}</td>
              <td>{r.completion_tokens}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && !error && <p className="muted">No usage recorded yet.</p>}
    </section>
  );
}

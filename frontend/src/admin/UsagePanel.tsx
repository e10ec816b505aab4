import { useEffect, useState } from "react";
import { errorMessage, getUsage } from "../api/client";
import type { UsageRow } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { Table } from "../ui/Table";

/** Requests and tokens per user or key per day. */
export function UsagePanel() {
  const [rows, setRows] = useState<UsageRow[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    getUsage().then(setRows, (e: unknown) => setError(errorMessage(e)));
  }, []);

  return (
    <section aria-labelledby="usage-heading">
      <h2 id="usage-heading">Usage</h2>
      <ErrorAlert message={error} />
      <Table label="Usage per day" columns={["Day", "Who", "Kind", "Requests", "Prompt tokens", "Completion tokens"]}>
        {rows.map((r) => (
          <tr key={`${r.actor_kind}-${r.actor_id}-${r.day}`}>
            <td>{r.day}</td>
            <td>{r.actor_name}</td>
            <td>{r.actor_kind === "key" ? "API key" : r.actor_kind}</td>
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

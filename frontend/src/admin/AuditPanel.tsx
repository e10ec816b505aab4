import { useEffect, useState } from "react";
import { errorMessage, listAudit } from "../api/client";
import type { AuditEvent } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { formatTime } from "../ui/format";
import { Table } from "../ui/Table";

/** Action prefixes offered as filters; the server matches events whose action starts with the prefix. */
export const AUDIT_FILTERS: { value: string; label: string }[] = [
  { value: "", label: "All actions" },
  { value: "session.", label: "Sign-ins (session.*)" },
  { value: "session.login_failed", label: "Failed sign-ins" },
  { value: "document.", label: "Documents (document.*)" },
  { value: "user.", label: "Users (user.*)" },
  { value: "key.", label: "API keys (key.*)" },
  { value: "ask", label: "Questions (ask)" },
];

const PAGE_SIZE = 50;
const SUMMARY_CHARS = 120;

/** "key: value, key: value" for an event's detail, shortened; the full JSON goes in a tooltip. */
export function summarizeDetail(detail: Record<string, unknown> | null | undefined): { short: string; full: string } {
  const entries = Object.entries(detail ?? {});
  if (entries.length === 0) return { short: "", full: "" };
  const text = entries
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
  const short = text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
  return { short, full: JSON.stringify(detail, null, 2) };
}

const ACTOR_KIND: Record<AuditEvent["actor_kind"], string> = { user: "user", key: "API key", system: "system" };

/** Who did what, newest first, 50 at a time, filtered by action prefix. */
export function AuditPanel() {
  const [action, setAction] = useState("");
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [nextBefore, setNextBefore] = useState<number | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [round, setRound] = useState(0); // bumped by Refresh

  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(null);
    listAudit({ action, limit: PAGE_SIZE }).then(
      (page) => {
        if (!live) return;
        setEvents(page.events);
        setNextBefore(page.next_before);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setEvents([]);
        setNextBefore(null);
        setError(errorMessage(e));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [action, round]);

  async function loadMore() {
    if (nextBefore === null) return;
    setLoading(true);
    setError(null);
    try {
      const page = await listAudit({ action, limit: PAGE_SIZE, before: nextBefore });
      setEvents((prev) => [...prev, ...page.events.filter((e) => !prev.some((p) => p.id === e.id))]);
      setNextBefore(page.next_before);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setLoading(false);
    }
  }

  return (
    <section aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit log</h2>
      <form className="filters" role="search" aria-label="Audit log filter" onSubmit={(e) => e.preventDefault()}>
        <label htmlFor="audit-action">Action</label>
        <select id="audit-action" value={action} onChange={(e) => setAction(e.target.value)}>
          {AUDIT_FILTERS.map((f) => (
            <option key={f.value} value={f.value}>
              {f.label}
            </option>
          ))}
        </select>
        <button type="button" onClick={() => setRound((r) => r + 1)} disabled={loading}>
          Refresh
        </button>
      </form>
      <ErrorAlert message={error} />
      <Table label="Audit events" className="audit-table" columns={["Time", "Actor", "Action", "Target", "Detail"]}>
        {events.map((e) => {
          const detail = summarizeDetail(e.detail);
          return (
            <tr key={e.id}>
              <td className="nowrap">{formatTime(e.created_at)}</td>
              <td>
                {e.actor_name || e.actor_id || "—"} <span className="muted">({ACTOR_KIND[e.actor_kind] ?? e.actor_kind})</span>
              </td>
              <td>
                <code>{e.action}</code>
              </td>
              <td className="wrap">{e.target}</td>
              <td className="wrap detail" title={detail.full || undefined}>
                {detail.short}
              </td>
            </tr>
          );
        })}
      </Table>
      {loading && <p className="muted" aria-live="polite">Loading…</p>}
      {!loading && events.length === 0 && !error && <p className="muted">No events.</p>}
      {nextBefore !== null && (
        <button type="button" onClick={() => void loadMore()} disabled={loading}>
          Load more
        </button>
      )}
    </section>
  );
}

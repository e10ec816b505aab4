import { useEffect, useRef, useState } from "react";
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

/** The actor the log is narrowed to: `id` goes to the server, `name` is shown in the chip. */
interface ActorFilter {
  id: string;
  name: string;
}

/**
 * Who did what, newest first, 50 at a time, filtered by action prefix and, after a click on an actor's name, by
 * that actor (shown as a removable chip).
 */
export function AuditPanel() {
  const [action, setAction] = useState("");
  const [actor, setActor] = useState<ActorFilter | null>(null);
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [nextBefore, setNextBefore] = useState<number | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [round, setRound] = useState(0); // bumped by Refresh
  const actionRef = useRef<HTMLSelectElement>(null);
  const chipRef = useRef<HTMLButtonElement>(null);
  // Where focus goes after the actor filter changes: the chip when one was chosen (the clicked row may go away),
  // the Action select when the chip was removed.
  const focusAfterFilter = useRef<"chip" | "action" | null>(null);
  const actorId = actor?.id ?? "";

  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(null);
    listAudit({ action, actor: actorId, limit: PAGE_SIZE }).then(
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
  }, [action, actorId, round]);

  useEffect(() => {
    const target = focusAfterFilter.current;
    focusAfterFilter.current = null;
    if (target === "chip") chipRef.current?.focus();
    else if (target === "action") actionRef.current?.focus();
  }, [actor]);

  function filterByActor(next: ActorFilter | null) {
    focusAfterFilter.current = next ? "chip" : "action";
    setActor(next);
  }

  async function loadMore() {
    if (nextBefore === null) return;
    setLoading(true);
    setError(null);
    try {
      const page = await listAudit({ action, actor: actorId, limit: PAGE_SIZE, before: nextBefore });
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
        <select id="audit-action" ref={actionRef} value={action} onChange={(e) => setAction(e.target.value)}>
          {AUDIT_FILTERS.map((f) => (
            <option key={f.value} value={f.value}>
              {f.label}
            </option>
          ))}
        </select>
        {actor && (
          <button type="button" ref={chipRef} className="filter-chip" onClick={() => filterByActor(null)}>
            Actor: {actor.name} <span aria-hidden="true">×</span>
            <span className="visually-hidden"> (remove filter)</span>
          </button>
        )}
        <button type="button" onClick={() => setRound((r) => r + 1)} disabled={loading}>
          Refresh
        </button>
      </form>
      <ErrorAlert message={error} />
      <Table label="Audit events" className="audit-table" columns={["Time", "Actor", "Action", "Target", "Detail"]}>
        {events.map((e) => {
          const detail = summarizeDetail(e.detail);
          const name = e.actor_name || e.actor_id || "—";
          const rowActorId = e.actor_id;
          return (
            <tr key={e.id}>
              <td className="nowrap">{formatTime(e.created_at)}</td>
              <td>
                {rowActorId ? (
                  <button
                    type="button"
                    className="link"
                    title={`Show only events by ${name}`}
                    onClick={() => filterByActor({ id: rowActorId, name })}
                  >
                    {name}
                  </button>
                ) : (
                  name
                )}{" "}
                <span className="muted">({ACTOR_KIND[e.actor_kind] ?? e.actor_kind})</span>
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

import { useEffect, useState } from "react";
import {
  errorMessage,
  listReviewItems,
  searchReviewSections,
  startRegressionRun,
  updateReviewItem,
} from "../api/client";
import type { RegressionRun, ReviewItem, ReviewStatus, SectionHit } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { formatTime } from "../ui/format";
import { Table } from "../ui/Table";
import { GapsPanel } from "./GapsPanel";

const REASONS: Record<string, string> = { thumbs_down: "thumbs-down", not_found: "not found", partial: "partial" };

export const sectionLabel = (title: string, path: string[]) => [title, ...path.filter((p) => p !== title)].join(" › ");

/** Facts typed one per line: trimmed, empty lines dropped. */
export const parseFacts = (text: string) =>
  text
    .split("\n")
    .map((f) => f.trim())
    .filter(Boolean);

function ItemDetail({ item, onSaved }: { item: ReviewItem; onSaved: (item: ReviewItem) => void }) {
  const [query, setQuery] = useState(item.question);
  const [hits, setHits] = useState<SectionHit[] | null>(null);
  const [chosen, setChosen] = useState<{ chunk_id: string; label: string } | null>(
    item.expected.chunk_id
      ? { chunk_id: item.expected.chunk_id, label: sectionLabel(item.expected.title, item.expected.section_path) }
      : null,
  );
  const [facts, setFacts] = useState(item.expected.facts.join("\n"));
  const [missing, setMissing] = useState(item.expected.document_missing);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);

  async function search() {
    setBusy(true);
    setError(null);
    try {
      setHits((await searchReviewSections(item.id, query.trim())).results);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  async function save(status: ReviewStatus) {
    setBusy(true);
    setError(null);
    setSaved(false);
    try {
      const updated = await updateReviewItem(item.id, {
        chunk_id: missing ? null : (chosen?.chunk_id ?? null),
        facts: parseFacts(facts),
        document_missing: missing,
        status,
      });
      setSaved(true);
      onSaved(updated);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <article className="review-item" aria-label="Review item">
      <h3>{item.question}</h3>
      <p>
        <span className="badge">{item.outcome}</span>{" "}
        {item.reasons.map((r) => (
          <span key={r} className="badge">
            {REASONS[r] ?? r}
          </span>
        ))}{" "}
        <span className="muted">{formatTime(item.created_at)}</span>
      </p>
      {item.comment && (
        <blockquote className="comment" aria-label="Feedback comment">
          {item.comment}
        </blockquote>
      )}
      <h4>Answer</h4>
      <p className="answer-text">{item.answer}</p>
      <h4>Sources</h4>
      {item.sources.length === 0 && <p className="muted">No sources.</p>}
      <ul>
        {item.sources.map((s, i) => (
          <li key={`${s.chunk_id}-${i}`}>{sectionLabel(s.title, s.section_path)}</li>
        ))}
      </ul>
      {item.hidden_sources > 0 && (
        <p className="muted">{item.hidden_sources} source(s) from documents you cannot see are not shown.</p>
      )}

      <h4>The right section</h4>
      <form
        className="filters"
        role="search"
        aria-label="Search sections"
        onSubmit={(e) => {
          e.preventDefault();
          void search();
        }}
      >
        <label htmlFor={`q-${item.id}`}>Search</label>
        <input id={`q-${item.id}`} value={query} onChange={(e) => setQuery(e.target.value)} />
        <button type="submit" disabled={busy}>
          Search
        </button>
      </form>
      {hits && hits.length === 0 && <p className="muted">No sections found.</p>}
      {hits && hits.length > 0 && (
        <ul className="section-hits">
          {hits.map((h) => {
            const label = sectionLabel(h.title, h.section_path);
            return (
              <li key={h.chunk_id}>
                <strong>{label}</strong>
                <p className="muted">{h.text.slice(0, 240)}</p>
                <button type="button" onClick={() => setChosen({ chunk_id: h.chunk_id, label })} disabled={missing}>
                  Mark this section
                </button>
              </li>
            );
          })}
        </ul>
      )}
      <p aria-live="polite">
        {chosen && !missing ? (
          <>
            Marked: <strong>{chosen.label}</strong>{" "}
            <button type="button" className="link" onClick={() => setChosen(null)}>
              clear
            </button>
          </>
        ) : (
          <span className="muted">No section marked.</span>
        )}
      </p>
      <label htmlFor={`facts-${item.id}`}>Expected answer facts (one per line)</label>
      <textarea id={`facts-${item.id}`} rows={3} value={facts} onChange={(e) => setFacts(e.target.value)} />
      <label className="checkbox">
        <input type="checkbox" checked={missing} onChange={(e) => setMissing(e.target.checked)} /> Document missing
        (no document answers this yet)
      </label>
      <ErrorAlert message={error} />
      <div className="actions">
        <button type="button" onClick={() => void save("reviewed")} disabled={busy}>
          Save review
        </button>
        <button type="button" onClick={() => void save("dismissed")} disabled={busy}>
          Dismiss
        </button>
        {saved && (
          <span role="status" className="muted">
            Saved.
          </span>
        )}
      </div>
    </article>
  );
}

const MARK = (ok: boolean | null) => (ok === null ? "—" : ok ? "yes" : "no");

export function RunResults({ run }: { run: RegressionRun }) {
  const changes = Object.entries(run.changes)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`)
    .join(", ");
  return (
    <div className="run-results">
      <p role="status">
        {run.passed} of {run.total} passed{changes ? ` (${changes})` : ""}.
      </p>
      <Table
        label="Regression results"
        className="run-table"
        columns={["Result", "Change", "Question", "Section cited", "Facts present", "Outcome"]}
      >
        {run.results.map((r) => (
          <tr key={r.item_id}>
            <td>{r.passed ? "pass" : "FAIL"}</td>
            <td>{r.change}</td>
            <td className="wrap">{r.question}</td>
            <td>{MARK(r.section_ok)}</td>
            <td className="wrap">
              {MARK(r.facts_ok)}
              {r.missing_facts.length > 0 && <span className="muted"> (missing: {r.missing_facts.join("; ")})</span>}
            </td>
            <td>
              {r.outcome}
              {r.error && <span className="error"> {r.error}</span>}
            </td>
          </tr>
        ))}
      </Table>
    </div>
  );
}

/**
 * The review queue for editors: answers that got a thumbs-down or ended not found / partial. A reviewer marks the
 * section that answers (searching inside the item), writes facts the answer must contain, or marks the document as
 * missing; reviewed items form the regression set, which admins replay with "Run regression". Below: knowledge gaps.
 */
export function ReviewPage({ canRun }: { canRun: boolean }) {
  const [status, setStatus] = useState<ReviewStatus | "all">("open");
  const [items, setItems] = useState<ReviewItem[]>([]);
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [run, setRun] = useState<RegressionRun | null>(null);
  const [running, setRunning] = useState(false);

  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(null);
    listReviewItems(status).then(
      (rows) => {
        if (!live) return;
        setItems(rows);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError(errorMessage(e));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [status]);

  async function runRegression() {
    setRunning(true);
    setError(null);
    try {
      setRun(await startRegressionRun());
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setRunning(false);
    }
  }

  const current = items.find((i) => i.id === selected) ?? null;
  return (
    <div className="review-page">
      <section aria-labelledby="review-heading">
        <h2 id="review-heading">Review queue</h2>
        <form className="filters" aria-label="Review filter" onSubmit={(e) => e.preventDefault()}>
          <label htmlFor="review-status">Show</label>
          <select
            id="review-status"
            value={status}
            onChange={(e) => setStatus(e.target.value as ReviewStatus | "all")}
          >
            <option value="open">Open</option>
            <option value="reviewed">Reviewed (regression set)</option>
            <option value="dismissed">Dismissed</option>
            <option value="all">All</option>
          </select>
          {canRun && (
            <button type="button" onClick={() => void runRegression()} disabled={running}>
              {running ? "Running…" : "Run regression"}
            </button>
          )}
        </form>
        <ErrorAlert message={error} />
        {run && <RunResults run={run} />}
        <Table label="Review items" className="review-table" columns={["Question", "Why", "Outcome", "Asked"]}>
          {items.map((i) => (
            <tr key={i.id} className={i.id === selected ? "selected" : undefined}>
              <td className="wrap">
                <button type="button" className="link" onClick={() => setSelected(i.id)}>
                  {i.question || "(no question)"}
                </button>
              </td>
              <td>{i.reasons.map((r) => REASONS[r] ?? r).join(", ")}</td>
              <td>{i.outcome}</td>
              <td className="nowrap">{formatTime(i.created_at)}</td>
            </tr>
          ))}
        </Table>
        {loading && <p className="muted">Loading…</p>}
        {!loading && items.length === 0 && !error && <p className="muted">Nothing to review.</p>}
        {current && (
          <ItemDetail
            key={current.id}
            item={current}
            onSaved={(updated) => setItems((prev) => prev.map((p) => (p.id === updated.id ? updated : p)))}
          />
        )}
      </section>
      <GapsPanel />
    </div>
  );
}

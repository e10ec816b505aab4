import { useId } from "react";
import type { Outcome, Source } from "../api/types";
import { sectionsOf } from "./excerpt";

const LABELS: Record<Outcome, string> = {
  answered: "Answered",
  partial: "Partial answer",
  not_found: "Not found in the documents",
};

/** A small label with the answer's outcome. */
export function OutcomeBadge({ outcome }: { outcome: Outcome }) {
  return <p className={`outcome-badge outcome-${outcome}`}>{LABELS[outcome] ?? outcome}</p>;
}

/** What a partial answer's documents do not say (`missing`), and the names its section mentions, but not where it
 * answers (`unlinked`, a subset of `missing`). */
export function MissingNote({ missing, unlinked = [] }: { missing: string[]; unlinked?: string[] }) {
  const id = useId();
  const linkedId = useId();
  const absent = missing.filter((m) => !unlinked.includes(m));
  return (
    <div className="outcome-note outcome-note-partial">
      {absent.length > 0 ? (
        <>
          <p id={id}>The documents found do not say anything about:</p>
          <ul aria-labelledby={id}>
            {absent.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        </>
      ) : null}
      {unlinked.length > 0 ? (
        <>
          <p id={linkedId}>The section found mentions these, but not where it answers: check that the answer applies.</p>
          <ul aria-labelledby={linkedId}>
            {unlinked.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}

/** The sections a not-found answer points to, each opening its passage. */
export function NearestSections({ sources, onOpen }: { sources: Source[]; onOpen: (chunkId: string) => void }) {
  const id = useId();
  const sections = sectionsOf(sources);
  if (sections.length === 0) return null;
  return (
    <div className="outcome-note">
      <p id={id}>Nearest sections to look at:</p>
      <ul aria-labelledby={id}>
        {sections.map((s) => (
          <li key={s.chunkId}>
            <button type="button" className="link" onClick={() => onOpen(s.chunkId)}>
              {s.label}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

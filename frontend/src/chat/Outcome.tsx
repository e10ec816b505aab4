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

/** A heading and the terms under it, the list labelled by the heading. */
function TermList({ heading, terms }: { heading: string; terms: string[] }) {
  const id = useId();
  return (
    <>
      <p id={id}>{heading}</p>
      <ul aria-labelledby={id}>
        {terms.map((m) => (
          <li key={m}>{m}</li>
        ))}
      </ul>
    </>
  );
}

/** What a partial answer's documents do not say (`missing`), and the names its section mentions, but not where it
 * answers (`unlinked`, a subset of `missing`). */
export function MissingNote({ missing, unlinked = [] }: { missing: string[]; unlinked?: string[] }) {
  const absent = missing.filter((m) => !unlinked.includes(m));
  return (
    <div className="outcome-note outcome-note-partial">
      {absent.length > 0 ? <TermList heading="The documents found do not say anything about:" terms={absent} /> : null}
      {unlinked.length > 0 ? (
        <TermList
          heading="The section found mentions these, but not where it answers: check that the answer applies."
          terms={unlinked}
        />
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

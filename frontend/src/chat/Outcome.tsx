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

/** What a partial answer's documents do not say. */
export function MissingNote({ missing }: { missing: string[] }) {
  const id = useId();
  return (
    <div className="outcome-note outcome-note-partial">
      <p id={id}>The documents found do not say anything about:</p>
      <ul aria-labelledby={id}>
        {missing.map((m) => (
          <li key={m}>{m}</li>
        ))}
      </ul>
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

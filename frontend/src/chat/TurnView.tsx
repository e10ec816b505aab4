import { useState } from "react";
import { citedSources, type Turn } from "./turns";
import { AnswerText } from "./AnswerText";
import { CitationChip } from "./CitationChip";
import { isExcerpt, withoutMissingNote } from "./excerpt";
import { ExcerptAnswer } from "./ExcerptAnswer";
import { MissingNote, NearestSections, OutcomeBadge } from "./Outcome";
import { FeedbackControls } from "./FeedbackControls";

interface Props {
  turn: Turn;
  onOpenCitation: (chunkId: string) => void;
}

const REASONS: Record<string, string> = {
  vector: "dense retrieval unavailable",
  graph: "graph retrieval unavailable",
  rerank: "reranking skipped",
  llm_fallback: "language model unavailable, extractive answer",
};

export const describeReason = (r: string) => REASONS[r] ?? r;

function StatusBanners({ turn }: { turn: Turn }) {
  return (
    <>
      {turn.refused && !turn.outcome && (
        <div className="banner banner-refused" role="status">
          The assistant could not answer this from the knowledge base.
        </div>
      )}
      {turn.degraded && (
        <div className="banner banner-degraded" role="status">
          Degraded answer{turn.degradedReasons.length > 0 ? `: ${turn.degradedReasons.map(describeReason).join("; ")}` : ""}.
        </div>
      )}
      {turn.status === "stopped" && <div className="banner" role="status">Stopped.</div>}
      {turn.status === "error" && (
        <div className="banner banner-error" role="alert">
          {turn.error ?? "The answer failed."}
        </div>
      )}
    </>
  );
}

function CopyButton({ text }: { text: string }) {
  const [label, setLabel] = useState("Copy answer");
  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setLabel("Copied");
    } catch {
      setLabel("Copy failed");
    }
    window.setTimeout(() => setLabel("Copy answer"), 2000);
  }
  return (
    <button type="button" onClick={copy} disabled={!text}>
      {label}
    </button>
  );
}

/** The finished answer's outcome: a badge above the answer, and below it what a partial answer's documents do not
 * say or the sections a not-found answer points to. */
function outcomeParts(turn: Turn, onOpenCitation: (chunkId: string) => void) {
  const outcome = turn.status === "done" ? turn.outcome : null;
  if (!outcome) return { badge: null, note: null };
  let note = null;
  if (outcome === "partial" && turn.missing.length > 0) note = <MissingNote missing={turn.missing} unlinked={turn.unlinked} />;
  if (outcome === "not_found") note = <NearestSections sources={turn.sources} onOpen={onOpenCitation} />;
  return { badge: <OutcomeBadge outcome={outcome} />, note };
}

/** One question and its answer, with its outcome, banners, citation list, copy and feedback. An answer quoted from
 * the documents is shown as quoted excerpts (see ExcerptAnswer); one a model wrote as text. */
export function TurnView({ turn, onOpenCitation }: Props) {
  const finished = turn.status !== "streaming";
  const cited = citedSources(turn.citations);
  const { badge, note } = outcomeParts(turn, onOpenCitation);
  const partial = turn.status === "done" && turn.outcome === "partial" && turn.missing.length > 0;
  return (
    <article className="turn" aria-busy={!finished}>
      {turn.question && <p className="question">{turn.question}</p>}
      <div className="answer">
        {badge}
        {isExcerpt(turn) && turn.unit ? (
          <ExcerptAnswer turn={{ ...turn, unit: turn.unit }} onOpenCitation={onOpenCitation} />
        ) : (
          <AnswerText
            turn={turn}
            text={partial ? withoutMissingNote(turn.answer) : turn.answer}
            onOpenCitation={onOpenCitation}
          />
        )}
        {!finished && !turn.answer && <span className="thinking">Thinking…</span>}
      </div>
      {note}
      <StatusBanners turn={turn} />
      {cited.length > 0 && (
        <ul className="citation-list" aria-label="Citations">
          {cited.map((c) => (
            <li key={c.n}>
              <CitationChip
                n={c.n}
                title={c.title}
                unsupported={c.unsupported > 0}
                onOpen={() => onOpenCitation(c.chunk_id)}
              />{" "}
              {c.title}
              {c.section ? ` — ${c.section}` : ""}
              {c.unsupported > 0 && (
                <span className="unsupported-note">
                  {" "}
                  ({c.unsupported} of {c.sentences} citing sentence{c.sentences === 1 ? "" : "s"} not supported)
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
      {finished && turn.answer && (
        <div className="turn-actions">
          <CopyButton text={turn.answer} />
          {turn.messageId && <FeedbackControls messageId={turn.messageId} />}
        </div>
      )}
    </article>
  );
}

import { useId, useState } from "react";
import { citationChips } from "./AnswerText";
import { excerptQuotes, passageBody, unitPassages, withoutMissingNote } from "./excerpt";
import { Markdown } from "./Markdown";
import type { Turn } from "./turns";

interface Props {
  turn: Pick<Turn, "answer" | "citations" | "sources" | "missing"> & { unit: NonNullable<Turn["unit"]> };
  onOpenCitation: (chunkId: string) => void;
}

/**
 * An answer quoted from the documents, shown as quoted excerpts rather than as prose: the answering section's title
 * above its quote (numbered steps stay a numbered list, [n] markers stay citation chips), a further quote per "Also,
 * from …" point, and "Show whole section", which reveals the full text of the section's passages.
 */
export function ExcerptAnswer({ turn, onOpenCitation }: Props) {
  const [open, setOpen] = useState(false);
  const regionId = useId();
  const { unit } = turn;
  const chips = citationChips(turn, onOpenCitation);
  const [main, ...also] = excerptQuotes(turn.missing.length > 0 ? withoutMissingNote(turn.answer) : turn.answer);
  const passages = unitPassages(unit, turn.sources);
  return (
    <>
      <div className="answer-text excerpt-answer">
        <figure className="excerpt" aria-labelledby={`${regionId}-from`}>
          <figcaption className="excerpt-source" id={`${regionId}-from`}>
            From <cite>{unit.label}</cite>
          </figcaption>
          <blockquote className="excerpt-quote">
            <Markdown text={main?.text ?? ""} cite={chips} />
          </blockquote>
        </figure>
        {also.map((q, i) => (
          <figure className="excerpt excerpt-also" key={i} aria-labelledby={`${regionId}-also${i}`}>
            <figcaption className="excerpt-source" id={`${regionId}-also${i}`}>
              {q.label ? (
                <>
                  Also, from <cite>{q.label}</cite>
                </>
              ) : (
                "Also"
              )}
            </figcaption>
            <blockquote className="excerpt-quote">
              <Markdown text={q.text} cite={chips} />
            </blockquote>
          </figure>
        ))}
      </div>
      {passages.length > 0 && (
        <div className="whole-section">
          <button type="button" className="link" aria-expanded={open} aria-controls={regionId} onClick={() => setOpen(!open)}>
            {open ? "Hide whole section" : "Show whole section"}
          </button>
          <div id={regionId} role="region" aria-label={`Whole section: ${unit.label}`} hidden={!open}>
            {passages.map((p) => (
              <blockquote className="section-passage" key={p.n}>
                <Markdown text={passageBody(p)} />
              </blockquote>
            ))}
          </div>
        </div>
      )}
    </>
  );
}

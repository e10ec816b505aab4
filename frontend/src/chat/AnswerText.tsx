import { Fragment } from "react";
import type { Turn } from "./turns";
import { chunkIdFor } from "./turns";
import { CitationChip } from "./CitationChip";

interface Props {
  turn: Pick<Turn, "answer" | "citations" | "sources">;
  onOpenCitation: (chunkId: string) => void;
}

const MARKER = /\[(\d+)\]/g;

/** The answer text with each resolvable [n] marker turned into a citation chip. */
export function AnswerText({ turn, onOpenCitation }: Props) {
  const parts: React.ReactNode[] = [];
  let last = 0;
  for (const m of turn.answer.matchAll(MARKER)) {
    const n = Number(m[1]);
    const chunkId = chunkIdFor(turn, n);
    if (chunkId === null) continue;
    const at = m.index ?? 0;
    if (at > last) parts.push(<Fragment key={`t${last}`}>{turn.answer.slice(last, at)}</Fragment>);
    const cited = turn.citations.filter((c) => c.n === n);
    const title = cited[0]?.title ?? turn.sources.find((s) => s.n === n)?.title;
    parts.push(
      <CitationChip
        key={`c${at}`}
        n={n}
        title={title}
        unsupported={cited.some((c) => !c.supported)}
        onOpen={() => onOpenCitation(chunkId)}
      />,
    );
    last = at + m[0].length;
  }
  if (last < turn.answer.length) parts.push(<Fragment key={`t${last}`}>{turn.answer.slice(last)}</Fragment>);
  return <div className="answer-text">{parts}</div>;
}

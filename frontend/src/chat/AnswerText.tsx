import { CitationChip } from "./CitationChip";
import { Markdown, type CiteRenderer } from "./Markdown";
import type { Turn } from "./turns";
import { chunkIdFor } from "./turns";

type CiteSource = Pick<Turn, "citations" | "sources">;

/** Each resolvable [n] marker of an answer becomes a citation chip that opens its passage; unknown ones stay text. */
export function citationChips(turn: CiteSource, onOpenCitation: (chunkId: string) => void): CiteRenderer {
  return (n, raw, key) => {
    const chunkId = chunkIdFor(turn, n);
    if (chunkId === null) return raw;
    const cited = turn.citations.filter((c) => c.n === n);
    const title = cited[0]?.title ?? turn.sources.find((s) => s.n === n)?.title;
    return (
      <CitationChip
        key={key}
        n={n}
        title={title}
        unsupported={cited.some((c) => !c.supported)}
        onOpen={() => onOpenCitation(chunkId)}
      />
    );
  };
}

interface Props {
  turn: Pick<Turn, "answer" | "citations" | "sources">;
  /** The text to show; the whole answer by default. */
  text?: string;
  onOpenCitation: (chunkId: string) => void;
}

/**
 * The answer as simple Markdown (paragraphs, lists, bold, italics, code; see markdown.ts), built as React elements
 * (no HTML injection), with each resolvable [n] marker turned into a citation chip; unknown markers stay text.
 */
export function AnswerText({ turn, text = turn.answer, onOpenCitation }: Props) {
  return (
    <div className="answer-text">
      <Markdown text={text} cite={citationChips(turn, onOpenCitation)} />
    </div>
  );
}

import type { ReactNode } from "react";
import { CitationChip } from "./CitationChip";
import { parseMarkdown, type Inline } from "./markdown";
import type { Turn } from "./turns";
import { chunkIdFor } from "./turns";

interface Props {
  turn: Pick<Turn, "answer" | "citations" | "sources">;
  onOpenCitation: (chunkId: string) => void;
}

/**
 * The answer as simple Markdown (paragraphs, lists, bold, code; see markdown.ts), built as React elements (no
 * HTML injection), with each resolvable [n] marker turned into a citation chip; unknown markers stay text.
 */
export function AnswerText({ turn, onOpenCitation }: Props) {
  function inline(nodes: Inline[], prefix: string): ReactNode[] {
    return nodes.map((node, i) => {
      const key = `${prefix}.${i}`;
      switch (node.t) {
        case "text":
          return node.s;
        case "br":
          return <br key={key} />;
        case "code":
          return <code key={key}>{node.s}</code>;
        case "strong":
          return <strong key={key}>{inline(node.children, key)}</strong>;
        case "cite": {
          const chunkId = chunkIdFor(turn, node.n);
          if (chunkId === null) return node.raw;
          const cited = turn.citations.filter((c) => c.n === node.n);
          const title = cited[0]?.title ?? turn.sources.find((s) => s.n === node.n)?.title;
          return (
            <CitationChip
              key={key}
              n={node.n}
              title={title}
              unsupported={cited.some((c) => !c.supported)}
              onOpen={() => onOpenCitation(chunkId)}
            />
          );
        }
      }
    });
  }

  return (
    <div className="answer-text">
      {parseMarkdown(turn.answer).map((block, b) => {
        const key = `b${b}`;
        if (block.t === "p") return <p key={key}>{inline(block.content, key)}</p>;
        const items = block.items.map((item, i) => <li key={i}>{inline(item, `${key}.${i}`)}</li>);
        return block.t === "ul" ? (
          <ul key={key}>{items}</ul>
        ) : (
          <ol key={key} start={block.start === 1 ? undefined : block.start}>
            {items}
          </ol>
        );
      })}
    </div>
  );
}

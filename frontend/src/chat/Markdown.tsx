import type { ReactNode } from "react";
import { parseMarkdown, type Inline } from "./markdown";

/** Renders a citation marker [n]; `raw` is its literal text. */
export type CiteRenderer = (n: number, raw: string, key: string) => ReactNode;

const literal: CiteRenderer = (_n, raw) => raw;

interface Props {
  text: string;
  /** How [n] markers render; by default they stay literal text (document text, whose markers cite nothing). */
  cite?: CiteRenderer;
}

/** Simple Markdown (see markdown.ts) as React elements: nothing in the text is ever interpreted as HTML. */
export function Markdown({ text, cite = literal }: Props) {
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
        case "em":
          return <em key={key}>{inline(node.children, key)}</em>;
        case "cite":
          return cite(node.n, node.raw, key);
      }
    });
  }

  return (
    <>
      {parseMarkdown(text).map((block, b) => {
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
    </>
  );
}

// A small, safe subset of Markdown for answers: paragraphs (single newlines become line breaks), bullet and
// numbered lists, **bold**, *italics* (excerpt answers name their section as "From *Guide › Section*:"), `code`,
// and [n] citation markers. It produces a tree that React renders as elements,
// so nothing in an answer is ever interpreted as HTML. Anything else stays literal text, which also holds for an
// unfinished **bold or `code while an answer is still streaming.

export type Inline =
  | { t: "text"; s: string }
  | { t: "code"; s: string }
  | { t: "strong"; children: Inline[] }
  | { t: "em"; children: Inline[] }
  | { t: "cite"; n: number; raw: string }
  | { t: "br" };

export type Block =
  | { t: "p"; content: Inline[] }
  | { t: "ul"; items: Inline[][] }
  | { t: "ol"; start: number; items: Inline[][] };

// code first, so a [1] inside `...` stays literal; bold and italics need non-space just inside their * pairs, and
// italics no * inside (so "2 * 3 * 4" and an unfinished **bold stay text).
const INLINE = /`([^`\n]+)`|\*\*(?=\S)([^\n]*?\S)\*\*|\*([^\s*](?:[^*\n]*?[^\s*])?)\*(?!\*)|\[(\d{1,4})\]/g;

export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  let last = 0;
  const push = (s: string) => {
    if (!s) return;
    const prev = out.at(-1);
    if (prev?.t === "text") prev.s += s;
    else out.push({ t: "text", s });
  };
  for (const m of text.matchAll(INLINE)) {
    const at = m.index ?? 0;
    push(text.slice(last, at));
    if (m[1] !== undefined) out.push({ t: "code", s: m[1] });
    else if (m[2] !== undefined) out.push({ t: "strong", children: parseInline(m[2]) });
    else if (m[3] !== undefined) out.push({ t: "em", children: parseInline(m[3]) });
    else out.push({ t: "cite", n: Number(m[4]), raw: m[0] });
    last = at + m[0].length;
  }
  push(text.slice(last));
  return out;
}

/** Lines joined by line breaks, each parsed inline. */
function inlineLines(lines: string[]): Inline[] {
  return lines.flatMap((line, i) => (i === 0 ? parseInline(line) : [{ t: "br" } as Inline, ...parseInline(line)]));
}

const BULLET = /^ {0,3}[-*+•]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;
const HEADING = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/;

export function parseMarkdown(text: string): Block[] {
  const blocks: Block[] = [];
  let para: string[] | null = null;
  let list: { t: "ul" | "ol"; start: number; items: string[][] } | null = null;

  const flush = () => {
    if (para) blocks.push({ t: "p", content: inlineLines(para) });
    if (list) {
      const items = list.items.map(inlineLines);
      blocks.push(list.t === "ul" ? { t: "ul", items } : { t: "ol", start: list.start, items });
    }
    para = null;
    list = null;
  };

  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) {
      flush();
      continue;
    }
    const bullet = BULLET.exec(line);
    const ordered = bullet ? null : ORDERED.exec(line);
    if (bullet || ordered) {
      const kind = bullet ? "ul" : "ol";
      const body = (bullet ? bullet[1] : ordered![2]).trim();
      if (!list || list.t !== kind) {
        flush();
        list = { t: kind, start: ordered ? Number(ordered[1]) : 1, items: [] };
      }
      list.items.push([body]);
      continue;
    }
    if (list) {
      // a line right after an item continues it (as in CommonMark)
      list.items[list.items.length - 1].push(line.trim());
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      blocks.push({ t: "p", content: [{ t: "strong", children: parseInline(heading[1]) }] });
      continue;
    }
    (para ??= []).push(line.trim());
  }
  flush();
  return blocks;
}

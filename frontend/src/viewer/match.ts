// Finding a cited passage among the text pieces of a rendered PDF page (pdf.js text-layer items) and splitting a
// section's text around the passage. Matching is by words, whitespace- and case-insensitive, and fuzzy: a page word
// counts when it starts or continues a run of words the passage also has, so line breaks, hyphenation and small
// extraction differences between the parser and pdf.js do not lose the highlight.

/** Lower-case words of a text (letters and digits; punctuation and whitespace separate words). */
export function words(text: string): string[] {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Page words in a gap this long or shorter between matched words are highlighted with them. */
const MAX_GAP = 6;

/**
 * Which of a page's text items belong to the passage: the indices of the items of the densest run of page words that
 * share word n-grams (n = 3, fewer for very short passages) with the passage. Empty when nothing matches.
 */
export function matchPassage(items: readonly string[], passage: string): Set<number> {
  const want = words(passage);
  if (want.length === 0) return new Set();
  const n = Math.min(3, want.length);
  const grams = new Set<string>();
  for (let i = 0; i + n <= want.length; i++) grams.add(want.slice(i, i + n).join(" "));

  const pageWords: string[] = [];
  const owner: number[] = []; // item index of each page word
  items.forEach((item, idx) => {
    for (const w of words(item)) {
      pageWords.push(w);
      owner.push(idx);
    }
  });

  const hit = new Array<boolean>(pageWords.length).fill(false);
  for (let i = 0; i + n <= pageWords.length; i++) {
    if (grams.has(pageWords.slice(i, i + n).join(" "))) for (let k = i; k < i + n; k++) hit[k] = true;
  }

  // Group hits into clusters separated by more than MAX_GAP unmatched words; keep the cluster with the most hits.
  let best: { from: number; to: number; hits: number } | null = null;
  let cur: { from: number; to: number; hits: number } | null = null;
  for (let i = 0; i < hit.length; i++) {
    if (!hit[i]) continue;
    if (cur && i - cur.to - 1 <= MAX_GAP) {
      cur.to = i;
      cur.hits++;
    } else {
      cur = { from: i, to: i, hits: 1 };
    }
    if (!best || cur.hits > best.hits) best = { ...cur };
  }
  const out = new Set<number>();
  if (!best) return out;
  for (let i = best.from; i <= best.to; i++) out.add(owner[i]);
  return out;
}

/** The share of the passage's words found in the highlighted items (0..1), to say how sure the highlight is. */
export function coverage(items: readonly string[], chosen: ReadonlySet<number>, passage: string): number {
  const want = words(passage);
  if (want.length === 0) return 0;
  const have = new Map<string, number>();
  for (const idx of chosen) for (const w of words(items[idx] ?? "")) have.set(w, (have.get(w) ?? 0) + 1);
  let found = 0;
  for (const w of want) {
    const left = have.get(w) ?? 0;
    if (left > 0) {
      found++;
      have.set(w, left - 1);
    }
  }
  return found / want.length;
}

/** A text cut into the part before the passage, the passage and the rest (offsets clamped to the text). */
export function splitAround(text: string, start: number, end: number): [string, string, string] {
  const s = Math.max(0, Math.min(start, text.length));
  const e = Math.max(s, Math.min(end, text.length));
  return [text.slice(0, s), text.slice(s, e), text.slice(e)];
}

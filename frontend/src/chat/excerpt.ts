// How a finished answer is laid out: excerpt answers (quoted from the documents by the extractive composer) split
// into their quotes, the section they come from, and the sections a not-found answer points to.
import type { AnswerUnit, Source } from "../api/types";
import type { Turn } from "./turns";

/** "Troubleshooting Guide › A device shows as offline": the server's unit label rule (a first path part equal to the
 * title is not repeated; the title alone without a section). */
export function sectionLabel(title: string, sectionPath: string[]): string {
  let path = sectionPath.map((p) => p.trim()).filter(Boolean);
  if (path.length > 0 && path[0].toLowerCase() === title.trim().toLowerCase()) path = path.slice(1);
  return [title.trim(), ...path].join(" › ");
}

const FROM = /^From \*(.+)\*:\s*$/;
const ALSO = /^Also(?:, from \*(.+?)\*)?:\s+/;
const MISSING_NOTE = /^(?:The documents found do not say anything about |The section found mentions )/;

/** The answer without the paragraph a partial answer ends with ("The documents found do not say anything about
 * “x”."), which the partial-answer note lists instead. */
export function withoutMissingNote(answer: string): string {
  const paragraphs = answer.trim().split(/\n[ \t]*\n/);
  if (paragraphs.length > 1 && MISSING_NOTE.test(paragraphs[paragraphs.length - 1].trim())) {
    return paragraphs.slice(0, -1).join("\n\n");
  }
  return answer;
}

export interface Quote {
  /** The section named in the answer ("From *label*:", "Also, from *label*:"); null when it names none. */
  label: string | null;
  /** The quoted text (Markdown-ish, with [n] markers). */
  text: string;
}

/** Splits "From *A › B*:\n1. step [1]\n2. step [1]\n\nAlso, from *C › D*: sentence [3]" into its quotes: the main
 * one first, then one per "Also" paragraph. */
export function excerptQuotes(answer: string): Quote[] {
  const quotes: Quote[] = [];
  for (const paragraph of answer.trim().split(/\n[ \t]*\n/)) {
    const lines = paragraph.split(/\r?\n/);
    const from = quotes.length === 0 ? FROM.exec(lines[0].trim()) : null;
    const also = quotes.length > 0 ? ALSO.exec(paragraph) : null;
    if (from) quotes.push({ label: from[1], text: lines.slice(1).join("\n") });
    else if (also) quotes.push({ label: also[1] ?? null, text: paragraph.slice(also[0].length) });
    else if (quotes.length === 0) quotes.push({ label: null, text: paragraph });
    else quotes[quotes.length - 1].text += `\n\n${paragraph}`;
  }
  return quotes;
}

/** Whether the finished answer is shown as quoted excerpts: the extractive composer wrote it (mode "excerpt", or a
 * generated answer the extractive fallback replaced because the model was unavailable) and it answers. */
export function isExcerpt(turn: Pick<Turn, "status" | "mode" | "outcome" | "unit" | "answer" | "degradedReasons">) {
  if (turn.status !== "done" || !turn.unit || !turn.outcome || turn.outcome === "not_found") return false;
  if (turn.mode === "excerpt") return true;
  const firstLine = turn.answer.trim().split("\n")[0].trim();
  return turn.mode === "generated" && turn.degradedReasons.includes("llm_fallback") && FROM.test(firstLine);
}

/** The `sources` entries that make up the answering section, in the unit's order. */
export function unitPassages(unit: AnswerUnit, sources: Source[]): Source[] {
  return unit.sources.flatMap((n) => sources.filter((s) => s.n === n));
}

/** A passage's text without the chunker's heading-path first line ("Guide > Section"). */
export function passageBody(source: Pick<Source, "text" | "section_path">): string {
  const text = source.text.trim();
  const newline = text.indexOf("\n");
  const first = (newline < 0 ? text : text.slice(0, newline)).trim();
  const crumb = source.section_path.join(" > ").trim();
  if (crumb && first === crumb) return newline < 0 ? "" : text.slice(newline + 1).trim();
  return text;
}

export interface SectionLink {
  label: string;
  /** The section's first passage, opened in the side panel. */
  chunkId: string;
}

/** The sections of the given sources, once each, in order (the nearest sections of a not-found answer). */
export function sectionsOf(sources: Source[]): SectionLink[] {
  const seen = new Set<string>();
  const out: SectionLink[] = [];
  for (const s of sources) {
    const key = JSON.stringify([s.document_id, s.section_path]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ label: sectionLabel(s.title, s.section_path), chunkId: s.chunk_id });
  }
  return out;
}

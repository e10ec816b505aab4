// Chat state: one Turn per question and its (streamed) answer. `applyEvent` folds /ask events into a turn.
import type { AnswerMode, AnswerUnit, AskEvent, Citation, ConversationMessage, Outcome, Source } from "../api/types";

export type TurnStatus = "streaming" | "done" | "stopped" | "error";

export interface Turn {
  key: string;
  question: string;
  answer: string;
  messageId: string | null;
  sources: Source[];
  citations: Citation[];
  degradedReasons: string[];
  degraded: boolean;
  refused: boolean;
  /** From `done`; null while streaming, for stored answers and from servers that do not send it. */
  outcome: Outcome | null;
  missing: string[];
  /** Those of `missing` the answering section names, but not where it answers. */
  unlinked: string[];
  unit: AnswerUnit | null;
  mode: AnswerMode | null;
  status: TurnStatus;
  error: string | null;
}

let counter = 0;

export function newTurn(question: string): Turn {
  counter += 1;
  return {
    key: `t${counter}`,
    question,
    answer: "",
    messageId: null,
    sources: [],
    citations: [],
    degradedReasons: [],
    degraded: false,
    refused: false,
    outcome: null,
    missing: [],
    unlinked: [],
    unit: null,
    mode: null,
    status: "streaming",
    error: null,
  };
}

export function applyEvent(turn: Turn, ev: AskEvent): Turn {
  switch (ev.type) {
    case "meta":
      return { ...turn, messageId: ev.data.message_id };
    case "sources":
      return { ...turn, sources: ev.data.sources };
    case "token":
      return { ...turn, answer: turn.answer + ev.data.text };
    case "citations":
      return { ...turn, citations: ev.data.citations };
    case "degraded":
      return { ...turn, degraded: true, degradedReasons: [...turn.degradedReasons, ...ev.data.reasons] };
    case "done":
      return {
        ...turn,
        // The final answer is authoritative (the server may have post-processed the streamed text).
        answer: ev.data.answer || turn.answer,
        // After a mid-stream error the server's final `done` carries only {error: true}.
        refused: Boolean(ev.data.refused),
        degraded: turn.degraded || Boolean(ev.data.degraded),
        outcome: ev.data.outcome ?? null,
        missing: ev.data.missing ?? [],
        unlinked: ev.data.unlinked ?? [],
        unit: ev.data.unit ?? null,
        mode: ev.data.mode ?? null,
        status: turn.status === "error" ? "error" : "done",
      };
    case "error":
      return { ...turn, status: "error", error: `${ev.data.message} (${ev.data.code})` };
    default:
      return turn;
  }
}

/** Rebuilds turns from a stored conversation: each user message followed by the assistant's reply. */
export function turnsFromMessages(messages: ConversationMessage[]): Turn[] {
  const turns: Turn[] = [];
  let current: Turn | null = null;
  for (const m of messages) {
    if (m.role === "user") {
      current = { ...newTurn(m.content), status: "done" };
      turns.push(current);
    } else if (m.role === "assistant") {
      if (!current || current.messageId !== null || current.answer) {
        current = { ...newTurn(""), status: "done" };
        turns.push(current);
      }
      current.answer = m.content;
      current.messageId = m.id;
      current.citations = m.citations ?? [];
    }
  }
  return turns;
}

/** Chunk id behind citation marker [n]: from the citations, else from the retrieved sources. */
export function chunkIdFor(turn: Pick<Turn, "citations" | "sources">, n: number): string | null {
  const c = turn.citations.find((x) => x.n === n);
  if (c) return c.chunk_id;
  const s = turn.sources.find((x) => x.n === n);
  return s ? s.chunk_id : null;
}

export interface CitedSource {
  n: number;
  chunk_id: string;
  title: string;
  section: string;
  /** Entries citing this source, one per answer sentence. */
  sentences: number;
  /** Sentences whose claim the cited passage does not support. */
  unsupported: number;
}

/** The citations event has one entry per (sentence, source): fold them into one entry per [n], in order. */
export function citedSources(citations: Citation[]): CitedSource[] {
  const byN = new Map<number, CitedSource>();
  for (const c of citations) {
    const entry = byN.get(c.n) ?? {
      n: c.n,
      chunk_id: c.chunk_id,
      title: c.title,
      section: c.section,
      sentences: 0,
      unsupported: 0,
    };
    entry.sentences += 1;
    if (!c.supported) entry.unsupported += 1;
    byN.set(c.n, entry);
  }
  return [...byN.values()].sort((a, b) => a.n - b.n);
}

import { useCallback, useEffect, useRef, useState } from "react";
import { ask, errorMessage, getConversation, listConversations } from "../api/client";
import type { ConversationSummary } from "../api/types";
import { applyEvent, newTurn, turnsFromMessages, type Turn } from "./turns";

/** Chat state: the turns of the open conversation, the conversation list, and the streaming request. */
export function useChat() {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [conversationId, setConversationId] = useState<string | null>(null);
  const [conversations, setConversations] = useState<ConversationSummary[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const abortRef = useRef<AbortController | null>(null);

  const refreshConversations = useCallback(() => {
    listConversations().then(setConversations, (e: unknown) => setError(errorMessage(e)));
  }, []);

  useEffect(() => {
    refreshConversations();
    return () => abortRef.current?.abort();
  }, [refreshConversations]);

  const updateTurn = (key: string, f: (t: Turn) => Turn) =>
    setTurns((ts) => ts.map((t) => (t.key === key ? f(t) : t)));

  const send = useCallback(
    async (question: string) => {
      const turn = newTurn(question);
      const controller = new AbortController();
      abortRef.current = controller;
      setTurns((ts) => [...ts, turn]);
      setBusy(true);
      setError(null);
      try {
        await ask(
          { question, ...(conversationId ? { conversation_id: conversationId } : {}) },
          (ev) => {
            if (ev.type === "meta") setConversationId(ev.data.conversation_id);
            updateTurn(turn.key, (t) => applyEvent(t, ev));
          },
          controller.signal,
        );
        // A stream that ended without `done` or `error` was cut off.
        updateTurn(turn.key, (t) =>
          t.status === "streaming" ? { ...t, status: "error", error: "The answer stream ended early." } : t,
        );
        refreshConversations();
      } catch (err) {
        if (controller.signal.aborted) updateTurn(turn.key, (t) => ({ ...t, status: "stopped" }));
        else updateTurn(turn.key, (t) => ({ ...t, status: "error", error: errorMessage(err) }));
      } finally {
        if (abortRef.current === controller) abortRef.current = null;
        setBusy(false);
      }
    },
    [conversationId, refreshConversations],
  );

  const stop = useCallback(() => abortRef.current?.abort(), []);

  const open = useCallback(async (id: string) => {
    abortRef.current?.abort();
    setError(null);
    try {
      const conv = await getConversation(id);
      setConversationId(conv.id);
      setTurns(turnsFromMessages(conv.messages));
    } catch (err) {
      setError(errorMessage(err));
    }
  }, []);

  const startNew = useCallback(() => {
    abortRef.current?.abort();
    setConversationId(null);
    setTurns([]);
  }, []);

  return { turns, conversationId, conversations, error, busy, send, stop, open, startNew };
}

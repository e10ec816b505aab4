import { useEffect, useRef, useState } from "react";
import { ErrorAlert } from "../ui/ErrorAlert";
import { Composer } from "./Composer";
import { ConversationList } from "./ConversationList";
import { SourcePanel } from "./SourcePanel";
import { TurnView } from "./TurnView";
import { useChat } from "./useChat";

export function ChatPage() {
  const chat = useChat();
  const [openChunk, setOpenChunkState] = useState<string | null>(null);
  const returnFocus = useRef<HTMLElement | null>(null);
  // Opening the panel moves focus into it; closing returns focus to the chip that opened it.
  const setOpenChunk = (id: string | null) => {
    if (id && !openChunk) returnFocus.current = document.activeElement as HTMLElement | null;
    if (!id && openChunk) window.setTimeout(() => returnFocus.current?.focus(), 0);
    setOpenChunkState(id);
  };
  const endRef = useRef<HTMLDivElement>(null);
  const lastAnswerLength = chat.turns.at(-1)?.answer.length ?? 0;

  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: "end" });
  }, [chat.turns.length, lastAnswerLength]);

  return (
    <div className={`chat-layout${openChunk ? " with-panel" : ""}`}>
      <ConversationList
        conversations={chat.conversations}
        activeId={chat.conversationId}
        onSelect={(id) => {
          setOpenChunk(null);
          void chat.open(id);
        }}
        onNew={() => {
          setOpenChunk(null);
          chat.startNew();
        }}
      />
      <section className="chat-main" aria-label="Chat">
        <div className="turns" aria-live="polite">
          {chat.turns.length === 0 && <p className="muted">Ask a question about your documents.</p>}
          {chat.turns.map((t) => (
            <TurnView key={t.key} turn={t} onOpenCitation={setOpenChunk} />
          ))}
          <div ref={endRef} />
        </div>
        <ErrorAlert message={chat.error} />
        <Composer busy={chat.busy} onSend={(q) => void chat.send(q)} onStop={chat.stop} />
      </section>
      {openChunk && <SourcePanel chunkId={openChunk} onClose={() => setOpenChunk(null)} />}
    </div>
  );
}

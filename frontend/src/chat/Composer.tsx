import { useState } from "react";

interface Props {
  busy: boolean;
  onSend: (question: string) => void;
  onStop: () => void;
}

/** Question box: Enter sends, Shift+Enter adds a line; Stop while an answer streams. */
export function Composer({ busy, onSend, onStop }: Props) {
  const [text, setText] = useState("");

  function send() {
    const q = text.trim();
    if (!q || busy) return;
    onSend(q);
    setText("");
  }

  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <label htmlFor="question">Question</label>
      <textarea
        id="question"
        rows={2}
        value={text}
        placeholder="Ask the knowledge base…"
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      {busy ? (
        <button type="button" className="danger" onClick={onStop}>
          Stop
        </button>
      ) : (
        <button type="submit" className="primary" disabled={!text.trim()}>
          Send
        </button>
      )}
    </form>
  );
}

import { useState } from "react";
import { errorMessage, sendFeedback } from "../api/client";
import { ErrorAlert } from "../ui/ErrorAlert";

type Rating = "up" | "down";

/** Thumbs up/down with an optional comment, sent once per answer. */
export function FeedbackControls({ messageId }: { messageId: string }) {
  const [rating, setRating] = useState<Rating | null>(null);
  const [comment, setComment] = useState("");
  const [state, setState] = useState<"idle" | "sending" | "sent">("idle");
  const [error, setError] = useState<string | null>(null);

  if (state === "sent") return <p className="feedback-sent" role="status">Thanks for the feedback.</p>;

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (!rating) return;
    setState("sending");
    setError(null);
    try {
      await sendFeedback(messageId, rating, comment.trim() || undefined);
      setState("sent");
    } catch (err) {
      setError(errorMessage(err));
      setState("idle");
    }
  }

  const commentId = `fb-comment-${messageId}`;
  return (
    <form className="feedback" onSubmit={submit}>
      <button type="button" aria-pressed={rating === "up"} aria-label="Helpful" onClick={() => setRating("up")}>
        <span aria-hidden="true">▲</span> Helpful
      </button>
      <button type="button" aria-pressed={rating === "down"} aria-label="Not helpful" onClick={() => setRating("down")}>
        <span aria-hidden="true">▼</span> Not helpful
      </button>
      {rating && (
        <>
          <label htmlFor={commentId}>Comment (optional)</label>
          <input id={commentId} value={comment} onChange={(e) => setComment(e.target.value)} />
          <button type="submit" disabled={state === "sending"}>
            Send feedback
          </button>
        </>
      )}
      <ErrorAlert message={error} inline />
    </form>
  );
}

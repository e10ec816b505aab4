import { useEffect, useRef, useState } from "react";
import { changePassword } from "../api/client";
import { ErrorAlert } from "../ui/ErrorAlert";
import { useAction } from "../ui/useAction";

export const MIN_PASSWORD_LENGTH = 10;

/** A small non-modal dialog to change the signed-in user's password. Escape or Close dismisses it. */
export function ChangePasswordDialog({ onClose }: { onClose: () => void }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [confirm, setConfirm] = useState("");
  const { run, busy, error } = useAction();
  const [done, setDone] = useState(false);
  const firstRef = useRef<HTMLInputElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);

  useEffect(() => firstRef.current?.focus(), []);
  useEffect(() => {
    if (done) closeRef.current?.focus(); // the form is gone: keep focus inside the dialog
  }, [done]);

  const problem =
    next.length > 0 && next.length < MIN_PASSWORD_LENGTH
      ? `The new password needs at least ${MIN_PASSWORD_LENGTH} characters.`
      : confirm.length > 0 && confirm !== next
        ? "The two new passwords differ."
        : null;
  const ready = current !== "" && next.length >= MIN_PASSWORD_LENGTH && confirm === next && !busy;

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (!ready) return;
    await run(async () => {
      await changePassword(current, next);
      setDone(true);
    });
  }

  return (
    <div
      className="popover"
      role="dialog"
      aria-labelledby="change-password-heading"
      onKeyDown={(e) => {
        if (e.key === "Escape") onClose();
      }}
    >
      <h2 id="change-password-heading">Change password</h2>
      {done ? (
        <>
          <p role="status">Password changed.</p>
          <button type="button" ref={closeRef} onClick={onClose}>
            Close
          </button>
        </>
      ) : (
        <form className="stacked-form" onSubmit={submit}>
          <label htmlFor="pw-current">Current password</label>
          <input
            id="pw-current"
            ref={firstRef}
            type="password"
            autoComplete="current-password"
            value={current}
            onChange={(e) => setCurrent(e.target.value)}
          />
          <label htmlFor="pw-new">New password</label>
          <input
            id="pw-new"
            type="password"
            autoComplete="new-password"
            aria-describedby="pw-hint"
            value={next}
            onChange={(e) => setNext(e.target.value)}
          />
          <span id="pw-hint" className="muted hint">
            At least {MIN_PASSWORD_LENGTH} characters.
          </span>
          <label htmlFor="pw-confirm">Confirm new password</label>
          <input
            id="pw-confirm"
            type="password"
            autoComplete="new-password"
            value={confirm}
            onChange={(e) => setConfirm(e.target.value)}
          />
          <ErrorAlert message={error ?? problem} />
          <div className="actions">
            <button type="submit" className="primary" disabled={!ready}>
              Change password
            </button>
            <button type="button" onClick={onClose}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </div>
  );
}

import { useCallback, useState } from "react";
import { errorMessage } from "../api/client";

/**
 * State for one async action started from a form or button: `run(action)` sets `busy` and clears `error`, awaits the
 * action, puts a failure's message (errorMessage) in `error`, and clears `busy`. It resolves true when the action
 * succeeded, false when it failed; it never rejects. `setError` lets the caller show other errors in the same place.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const run = useCallback(async (action: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (err) {
      setError(errorMessage(err));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);

  return { run, busy, error, setError };
}

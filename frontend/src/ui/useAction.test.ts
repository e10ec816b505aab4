import { act, renderHook } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { useAction } from "./useAction";

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("useAction", () => {
  it("is busy while the action runs and resolves true when it succeeds", async () => {
    const { result } = renderHook(() => useAction());
    const step = deferred();
    let outcome: Promise<boolean> | undefined;
    act(() => {
      outcome = result.current.run(() => step.promise);
    });
    expect(result.current.busy).toBe(true);
    await act(async () => {
      step.resolve();
      expect(await outcome).toBe(true);
    });
    expect(result.current.busy).toBe(false);
    expect(result.current.error).toBeNull();
  });

  it("shows a failure's message, resolves false, and clears the error when run again", async () => {
    const { result } = renderHook(() => useAction());
    let ok: boolean | undefined;
    await act(async () => {
      ok = await result.current.run(() => Promise.reject(new ApiError(409, "email_taken", "Email in use")));
    });
    expect(ok).toBe(false);
    expect(result.current.busy).toBe(false);
    expect(result.current.error).toBe("Email in use (email_taken)");

    const step = deferred();
    act(() => {
      void result.current.run(() => step.promise);
    });
    expect(result.current.error).toBeNull();
    await act(async () => step.resolve());
  });

  it("lets the caller set an error of its own", () => {
    const { result } = renderHook(() => useAction());
    act(() => result.current.setError("Could not load the list"));
    expect(result.current.error).toBe("Could not load the list");
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { jsonResponse, mockFetch, sse, streamResponse } from "../test/fetchMock";
import { ApiError, ask, login, sendFeedback, setCsrfToken } from "./client";
import type { AskEvent } from "./types";

afterEach(() => setCsrfToken(null));

describe("api client", () => {
  it("sends the CSRF token from login on non-GET requests only", async () => {
    const { calls } = mockFetch({
      "POST /api/v1/auth/session": () =>
        jsonResponse({ csrf_token: "tok123", role: "agent", tenant: "t", key_name: "k" }),
      "POST /api/v1/feedback": () => jsonResponse({}, 201),
    });
    await login("secret");
    await sendFeedback("m1", "up", "nice");
    const fb = calls[1];
    expect(new Headers(fb.init.headers).get("X-CSRF-Token")).toBe("tok123");
    expect(JSON.parse(fb.init.body as string)).toEqual({ message_id: "m1", rating: "up", comment: "nice" });
  });

  it("maps JSON errors to ApiError", async () => {
    mockFetch({
      "POST /api/v1/auth/session": () => jsonResponse({ error: { code: "invalid_key", message: "Bad key" } }, 401),
    });
    const err = await login("nope").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 401, code: "invalid_key", message: "Bad key" });
  });

  it("streams ask events in order and skips unknown events", async () => {
    mockFetch({
      "POST /api/v1/ask": () =>
        streamResponse([
          sse("meta", { message_id: "m", conversation_id: "c" }).slice(0, 10),
          sse("meta", { message_id: "m", conversation_id: "c" }).slice(10) + ": ping\n\n",
          sse("token", { text: "Hi" }) + sse("mystery", {}),
          sse("done", { answer: "Hi", refused: false, degraded: false }),
        ]),
    });
    const seen: AskEvent[] = [];
    await ask({ question: "q" }, (e) => seen.push(e));
    expect(seen.map((e) => e.type)).toEqual(["meta", "token", "done"]);
  });
});

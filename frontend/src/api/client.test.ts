import { afterEach, describe, expect, it, vi } from "vitest";
import { installFakeXhr, lastXhr } from "../test/fakeXhr";
import { jsonResponse, mockFetch, sse, streamResponse } from "../test/fetchMock";
import {
  ApiError,
  ask,
  changePassword,
  createUser,
  errorMessage,
  listAudit,
  listUsers,
  login,
  loginWithPassword,
  sendFeedback,
  setCsrfToken,
  setUnauthorizedHandler,
  uploadDocuments,
} from "./client";
import type { AskEvent } from "./types";

afterEach(() => {
  setCsrfToken(null);
  setUnauthorizedHandler(null);
});

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

  it("signs in with email and password and reports rate limiting with its wait", async () => {
    let attempts = 0;
    const { calls } = mockFetch({
      "POST /api/v1/auth/session": () =>
        ++attempts === 1
          ? new Response(JSON.stringify({ error: { code: "rate_limited", message: "too many failed sign-ins" } }), {
              status: 429,
              headers: { "Content-Type": "application/json", "Retry-After": "30" },
            })
          : jsonResponse({ csrf_token: "t", role: "agent", tenant: "t", kind: "user", name: "Ann", key_name: "Ann" }),
    });
    const err = await loginWithPassword("ann@example.com", "pw").catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429, code: "rate_limited", retryAfterS: 30 });
    expect(errorMessage(err)).toBe("too many failed sign-ins (rate_limited) Try again in 30 s.");
    const session = await loginWithPassword("ann@example.com", "correct horse");
    expect(session.name).toBe("Ann");
    expect(JSON.parse(calls[1].init.body as string)).toEqual({ email: "ann@example.com", password: "correct horse" });
  });

  it("ends the session on a 401, except when a password change is refused", async () => {
    const onUnauthorized = vi.fn();
    setUnauthorizedHandler(onUnauthorized);
    mockFetch({
      "POST /api/v1/auth/password": () =>
        jsonResponse({ error: { code: "unauthenticated", message: "current password is wrong" } }, 401),
      "GET /api/v1/users": () => jsonResponse({ error: { code: "unauthenticated", message: "expired" } }, 401),
    });
    await expect(changePassword("old", "new password 123")).rejects.toMatchObject({ status: 401 });
    expect(onUnauthorized).not.toHaveBeenCalled();
    await expect(listUsers()).rejects.toMatchObject({ status: 401 });
    expect(onUnauthorized).toHaveBeenCalledTimes(1);
  });

  it("keeps the fresh CSRF token a password change answers with", async () => {
    const { calls } = mockFetch({
      "POST /api/v1/auth/session": () => jsonResponse({ csrf_token: "old", role: "agent", tenant: "t", kind: "user", name: "A", key_name: "A" }),
      "POST /api/v1/auth/password": () => jsonResponse({ csrf_token: "new", role: "agent", tenant: "t", kind: "user", name: "A", key_name: "A" }),
      "POST /api/v1/feedback": () => jsonResponse({}, 201),
    });
    await loginWithPassword("a@example.com", "old password");
    await changePassword("old password", "new password!");
    expect(new Headers(calls[1].init.headers).get("X-CSRF-Token")).toBe("old");
    await sendFeedback("m1", "up");
    expect(new Headers(calls[2].init.headers).get("X-CSRF-Token")).toBe("new");
  });

  it("spells out which fields a validation error names", async () => {
    mockFetch({
      "POST /api/v1/users": () =>
        jsonResponse(
          {
            error: {
              code: "validation_error",
              message: "the request is not valid",
              details: { errors: [{ loc: ["body", "email"], msg: "Value error, not an e-mail address", type: "value_error" }] },
            },
          },
          422,
        ),
    });
    const err = await createUser({ email: "x", name: "", role: "agent", acl_groups: [], password: "0123456789" }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      status: 422,
      code: "validation_error",
      message: "the request is not valid: email: Value error, not an e-mail address",
    });
  });

  it("builds the audit query from filter, limit and cursor", async () => {
    const { calls } = mockFetch({ "GET /api/v1/audit": () => jsonResponse({ events: [], next_before: null }) });
    await listAudit({ action: "document.", before: 120 });
    expect(calls[0].url).toBe("/api/v1/audit?action=document.&limit=50&before=120");
  });
});

describe("uploadDocuments (XMLHttpRequest)", () => {
  const file = new File(["# Notes"], "notes.md", { type: "text/markdown" });

  it("reports byte progress, sends the CSRF token and resolves with the documents", async () => {
    installFakeXhr();
    setCsrfToken("tok");
    const seen: [number, number][] = [];
    const done = uploadDocuments([file], { aclGroups: " staff ", onProgress: (l, t) => seen.push([l, t]) });
    const xhr = lastXhr();
    expect(xhr.method).toBe("POST");
    expect(xhr.url).toBe("/api/v1/documents");
    expect(xhr.requestHeaders["X-CSRF-Token"]).toBe("tok");
    const form = xhr.body as FormData;
    expect((form.get("files") as File).name).toBe("notes.md");
    expect(form.get("acl_groups")).toBe("staff");
    xhr.progress(21, 50);
    xhr.progress(50, 50);
    xhr.respond(202, { documents: [{ id: "d1", filename: "notes.md", status: "queued", duplicate: false }] });
    expect(await done).toEqual([{ id: "d1", filename: "notes.md", status: "queued", duplicate: false }]);
    expect(seen).toEqual([
      [21, 50],
      [50, 50],
    ]);
  });

  it("turns JSON error answers into ApiError and a 401 into a signed-out app", async () => {
    installFakeXhr();
    const onUnauthorized = vi.fn();
    setUnauthorizedHandler(onUnauthorized);
    const tooBig = uploadDocuments([file]);
    lastXhr().respond(413, { error: { code: "payload_too_large", message: "file over 50 MB" } });
    const err = await tooBig.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 413, code: "payload_too_large", message: "file over 50 MB" });
    expect(onUnauthorized).not.toHaveBeenCalled();

    const expired = uploadDocuments([file]);
    lastXhr().respond(401, "<html>nope</html>");
    await expect(expired).rejects.toMatchObject({ status: 401, code: "http_401" });
    expect(onUnauthorized).toHaveBeenCalledTimes(1);

    const offline = uploadDocuments([file]);
    lastXhr().failNetwork();
    await expect(offline).rejects.toMatchObject({ code: "network_error" });
  });

  it("aborts the request when the signal fires", async () => {
    installFakeXhr();
    const ctrl = new AbortController();
    const pending = uploadDocuments([file], { signal: ctrl.signal });
    ctrl.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(lastXhr().aborted).toBe(true);
  });
});

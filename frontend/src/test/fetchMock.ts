// Test helpers: a routing fetch mock and streaming SSE responses.
import { vi } from "vitest";

export type Handler = (req: { url: string; method: string; init: RequestInit }) => Response | Promise<Response>;

export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json" },
  });
}

export function sse(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A streamed response whose pieces are pushed by the test; `close()` ends it. Aborting errors it. */
export function controlledStream(signal?: AbortSignal | null) {
  const enc = new TextEncoder();
  let ctrl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      ctrl = c;
    },
  });
  signal?.addEventListener("abort", () => ctrl.error(new DOMException("Aborted", "AbortError")));
  return {
    response: new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } }),
    push: (text: string) => ctrl.enqueue(enc.encode(text)),
    close: () => ctrl.close(),
  };
}

/** Streams the given pieces, one per read. */
export function streamResponse(pieces: string[]): Response {
  const enc = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < pieces.length) c.enqueue(enc.encode(pieces[i++]));
      else c.close();
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

/** Installs a fetch mock; routes are "METHOD /path" (query string ignored) -> handler. Unknown routes 404. */
export function mockFetch(routes: Record<string, Handler>) {
  const calls: { method: string; url: string; init: RequestInit }[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const method = (init.method ?? "GET").toUpperCase();
    calls.push({ method, url, init });
    const path = url.split("?")[0];
    const handler = routes[`${method} ${path}`];
    if (!handler) return jsonResponse({ error: { code: "not_found", message: `no route ${method} ${path}` } }, 404);
    return handler({ url, method, init });
  });
  vi.stubGlobal("fetch", fn);
  return { fn, calls };
}

// FakeXhr: a stand-in for XMLHttpRequest in unit tests. It records each request and lets the test drive upload
// progress and the answer by hand.
import { vi } from "vitest";

type Listener = ((e: ProgressEvent) => void) | null;

export class FakeXhr {
  static instances: FakeXhr[] = [];

  method = "";
  url = "";
  withCredentials = false;
  requestHeaders: Record<string, string> = {};
  body: unknown = undefined;
  status = 0;
  statusText = "";
  responseText = "";
  aborted = false;
  private responseHeaders: Record<string, string> = {};
  upload: { onprogress: Listener } = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;

  constructor() {
    FakeXhr.instances.push(this);
  }

  open(method: string, url: string): void {
    this.method = method;
    this.url = url;
  }

  setRequestHeader(name: string, value: string): void {
    this.requestHeaders[name] = value;
  }

  getResponseHeader(name: string): string | null {
    return this.responseHeaders[name.toLowerCase()] ?? null;
  }

  send(body: unknown): void {
    this.body = body;
  }

  abort(): void {
    this.aborted = true;
    this.onabort?.();
  }

  // --- driven by the test ---

  progress(loaded: number, total: number): void {
    this.upload.onprogress?.({ lengthComputable: true, loaded, total } as ProgressEvent);
  }

  respond(status: number, body: unknown, headers: Record<string, string> = {}): void {
    this.status = status;
    this.statusText = status === 200 || status === 202 ? "OK" : "Error";
    this.responseText = typeof body === "string" ? body : JSON.stringify(body);
    this.responseHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    this.onload?.();
  }

  failNetwork(): void {
    this.onerror?.();
  }
}

/** Replaces XMLHttpRequest with FakeXhr for the current test (undone by vi.unstubAllGlobals). */
export function installFakeXhr(): typeof FakeXhr {
  FakeXhr.instances = [];
  vi.stubGlobal("XMLHttpRequest", FakeXhr);
  return FakeXhr;
}

/** The most recent request. */
export function lastXhr(): FakeXhr {
  const xhr = FakeXhr.instances.at(-1);
  if (!xhr) throw new Error("no XMLHttpRequest was opened");
  return xhr;
}

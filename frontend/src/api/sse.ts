// Incremental parser for text/event-stream bodies (the subset of the WHATWG format the API uses).
// Feed it decoded text in arbitrary pieces; it returns every event completed so far.

export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export interface SseParser {
  /** Add the next piece of the stream; returns the events it completed. */
  push(text: string): SseEvent[];
  /** End of stream. As the format prescribes, an event not closed by a blank line is dropped. */
  finish(): void;
}

export function createSseParser(): SseParser {
  let buffer = "";
  let event = "";
  let id: string | undefined;
  let data: string[] = [];
  let hasData = false;

  function dispatch(out: SseEvent[]): void {
    if (hasData) {
      out.push({ event: event || "message", data: data.join("\n"), ...(id ? { id } : {}) });
    }
    event = "";
    data = [];
    hasData = false;
  }

  function line(raw: string, out: SseEvent[]): void {
    if (raw === "") {
      dispatch(out);
      return;
    }
    if (raw.startsWith(":")) return; // comment, e.g. ": ping" heartbeat
    const colon = raw.indexOf(":");
    const field = colon === -1 ? raw : raw.slice(0, colon);
    let value = colon === -1 ? "" : raw.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") {
      data.push(value);
      hasData = true;
    } else if (field === "id") id = value;
    // "retry" and unknown fields are ignored
  }

  return {
    push(text: string) {
      buffer += text;
      const out: SseEvent[] = [];
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer);
        if (!m) break;
        // A lone "\r" at the very end may be the first half of "\r\n": wait for more text.
        if (m[0] === "\r" && m.index === buffer.length - 1) break;
        line(buffer.slice(0, m.index), out);
        buffer = buffer.slice(m.index + m[0].length);
      }
      return out;
    },
    finish() {
      buffer = "";
      event = "";
      data = [];
      hasData = false;
    },
  };
}

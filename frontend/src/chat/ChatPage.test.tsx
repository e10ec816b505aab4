import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { controlledStream, jsonResponse, mockFetch, sse, streamResponse } from "../test/fetchMock";
import { ChatPage } from "./ChatPage";

const META = {
  request_id: "r1",
  conversation_id: "conv1",
  message_id: "msg1",
  versions: { chunker: "c", embedder: "e", prompt_template: "p", model: "m" },
};
const SOURCE = {
  n: 1,
  chunk_id: "chunk-1",
  document_id: "doc-1",
  title: "Router Manual",
  section_path: ["Setup", "Reset"],
  page_start: 3,
  page_end: 3,
  score: 0.9,
  text: "Hold the button.",
};
const CITATION = {
  n: 1,
  chunk_id: "chunk-1",
  document_id: "doc-1",
  title: "Router Manual",
  section: "Reset",
  page_start: 3,
  page_end: 3,
  sentence: "Hold reset for 10 s.",
  supported: true,
};
const DONE = {
  usage: { prompt_tokens: 10, completion_tokens: 5 },
  timings_ms: {},
  refused: false,
  degraded: true,
  answer: "Hold reset for 10 s [1].",
};
const CHUNK = {
  chunk_id: "chunk-1",
  document_id: "doc-1",
  title: "Router Manual",
  section_path: ["Setup", "Reset"],
  page_start: 3,
  page_end: 3,
  text: "To reset the router, hold the reset button for ten seconds.",
};

const baseRoutes = {
  "GET /api/v1/conversations": () => jsonResponse({ conversations: [] }),
  "GET /api/v1/chunks/chunk-1": () => jsonResponse(CHUNK),
  "GET /api/v1/chunks/chunk-1/section": () =>
    jsonResponse({
      ...CHUNK, document_version: 1, doc_type: "markdown", truncated: false,
      text: `Before you start. ${CHUNK.text} Then wait.`, highlight_start: 18, highlight_end: 18 + CHUNK.text.length,
    }),
};

async function ask(user: ReturnType<typeof userEvent.setup>, text: string) {
  await user.type(screen.getByLabelText("Question"), text);
  await user.keyboard("{Enter}");
}

describe("ChatPage", () => {
  it("streams the answer, renders citation chips, opens the cited passage and shows the degraded banner", async () => {
    let stream!: ReturnType<typeof controlledStream>;
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": ({ init }) => {
        stream = controlledStream(init.signal);
        return stream.response;
      },
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "How do I reset?");

    await waitFor(() => expect(stream).toBeDefined());
    stream.push(sse("meta", META) + sse("sources", { sources: [SOURCE] }) + sse("token", { text: "Hold reset " }));
    expect(await screen.findByText("Hold reset")).toBeInTheDocument(); // partial answer while streaming
    expect(screen.getByRole("button", { name: "Stop" })).toBeInTheDocument();

    stream.push(sse("token", { text: "for 10 s [1]." }) + ": ping\n\n");
    stream.push(sse("citations", { citations: [CITATION] }) + sse("degraded", { reasons: ["rerank"] }));
    stream.push(sse("done", DONE));
    stream.close();

    expect(await screen.findByRole("button", { name: "Send" })).toBeInTheDocument();
    expect(screen.getByText(/Degraded answer: reranking skipped/)).toBeInTheDocument();
    const chips = screen.getAllByRole("button", { name: "Citation 1: Router Manual" });
    expect(chips).toHaveLength(2); // inline marker + citation list

    await user.click(chips[0]);
    const panel = await screen.findByRole("complementary", { name: "Cited passage" });
    expect(await within(panel).findByText(CHUNK.text, { selector: "mark" })).toBeInTheDocument();
    expect(within(panel).getByText("Setup › Reset")).toBeInTheDocument();
    expect(within(panel).getByText("p. 3")).toBeInTheDocument();
    expect(within(panel).getByRole("heading", { name: "Router Manual" })).toHaveFocus();

    await user.keyboard("{Escape}");
    expect(screen.queryByRole("complementary", { name: "Cited passage" })).toBeNull();
    await waitFor(() => expect(chips[0]).toHaveFocus());
  });

  it("stops a streaming answer with the Stop button", async () => {
    let signal: AbortSignal | null | undefined;
    let stream!: ReturnType<typeof controlledStream>;
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": ({ init }) => {
        signal = init.signal;
        stream = controlledStream(init.signal);
        return stream.response;
      },
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "Long question");
    await waitFor(() => expect(stream).toBeDefined());
    stream.push(sse("meta", META) + sse("token", { text: "Partial" }));
    await screen.findByText("Partial");

    await user.click(screen.getByRole("button", { name: "Stop" }));
    expect(await screen.findByText("Stopped.")).toBeInTheDocument();
    expect(signal?.aborted).toBe(true);
    expect(screen.getByRole("button", { name: "Send" })).toBeInTheDocument();
  });

  it("sends follow-ups in the same conversation and shows the refusal banner", async () => {
    const bodies: Record<string, unknown>[] = [];
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": ({ init }) => {
        bodies.push(JSON.parse(init.body as string));
        return streamResponse([
          sse("meta", META),
          sse("done", { ...DONE, degraded: false, refused: true, answer: "I don't know." }),
        ]);
      },
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "First?");
    expect(await screen.findByText("I don't know.")).toBeInTheDocument();
    expect(screen.getByText(/could not answer this from the knowledge base/)).toBeInTheDocument();
    await ask(user, "Follow-up?");
    await waitFor(() => expect(bodies).toHaveLength(2));
    expect(bodies[0]).toEqual({ question: "First?" });
    expect(bodies[1]).toEqual({ question: "Follow-up?", conversation_id: "conv1" });
  });

  it("streams an excerpt answer: steps quoted under their section with its outcome, whole section on demand", async () => {
    const steps = ["Hold the reset button for ten seconds.", "Wait for the light to blink.", "Sign in again."];
    const answer = `From *Router Manual › Reset*:\n${steps.map((t, i) => `${i + 1}. ${t} [1]`).join("\n")}`;
    const source = { ...SOURCE, text: `Setup > Reset\nTo reset the router:\n${steps.map((t, i) => `${i + 1}. ${t}`).join("\n")}` };
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": () =>
        streamResponse([
          sse("meta", META),
          sse("sources", { sources: [source] }),
          sse("token", { text: answer }),
          sse("citations", { citations: steps.map((sentence) => ({ ...CITATION, sentence })) }),
          sse("done", {
            ...DONE,
            degraded: false,
            answer,
            outcome: "answered",
            missing: [],
            unit: { label: "Router Manual › Reset", document_id: "doc-1", section_path: ["Setup", "Reset"], sources: [1] },
            mode: "excerpt",
          }),
        ]),
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "How do I reset the router?");
    const quote = await screen.findByRole("figure", { name: "From Router Manual › Reset" });
    expect(screen.getByText("Answered")).toBeInTheDocument();
    expect(within(quote).getAllByRole("listitem").map((li) => li.textContent)).toEqual(steps.map((t) => `${t} [1]`));
    await user.click(screen.getByRole("button", { name: "Show whole section" }));
    const region = screen.getByRole("region", { name: "Whole section: Router Manual › Reset" });
    expect(within(region).getByText("To reset the router:")).toBeInTheDocument();
    await user.click(within(quote).getAllByRole("button", { name: "Citation 1: Router Manual" })[0]);
    const panel = await screen.findByRole("complementary", { name: "Cited passage" });
    expect(await within(panel).findByText(CHUNK.text)).toBeInTheDocument();
  });

  it("streams a not-found answer with the nearest sections to open", async () => {
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": () =>
        streamResponse([
          sse("meta", META),
          sse("sources", { sources: [SOURCE] }),
          sse("token", { text: "I could not find this in the knowledge base. The nearest sections are: *Router Manual › Reset*." }),
          sse("citations", { citations: [] }),
          sse("done", {
            ...DONE,
            degraded: false,
            refused: true,
            answer: "I could not find this in the knowledge base. The nearest sections are: *Router Manual › Reset*.",
            outcome: "not_found",
            missing: [],
            unit: null,
            mode: "excerpt",
          }),
        ]),
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "What does the router cost in 2025?");
    expect(await screen.findByText("Not found in the documents")).toBeInTheDocument();
    const nearest = screen.getByRole("list", { name: "Nearest sections to look at:" });
    await user.click(within(nearest).getByRole("button", { name: "Router Manual › Setup › Reset" }));
    const panel = await screen.findByRole("complementary", { name: "Cited passage" });
    expect(await within(panel).findByText(CHUNK.text)).toBeInTheDocument();
  });

  it("sends thumbs feedback with a comment for the answer's message id", async () => {
    const feedback: unknown[] = [];
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": () => streamResponse([sse("meta", META), sse("token", { text: "Yes." }), sse("done", DONE)]),
      "POST /api/v1/feedback": ({ init }) => {
        feedback.push(JSON.parse(init.body as string));
        return jsonResponse({ id: "f1" }, 201);
      },
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "Q");
    await user.click(await screen.findByRole("button", { name: "Not helpful" }));
    await user.type(screen.getByLabelText("Comment (optional)"), "Wrong page");
    await user.click(screen.getByRole("button", { name: "Send feedback" }));
    expect(await screen.findByText("Thanks for the feedback.")).toBeInTheDocument();
    expect(feedback).toEqual([{ message_id: "msg1", rating: "down", comment: "Wrong page" }]);
  });

  it("shows a stream error event", async () => {
    mockFetch({
      ...baseRoutes,
      "POST /api/v1/ask": () =>
        streamResponse([sse("meta", META), sse("error", { code: "llm_unavailable", message: "Model down" })]),
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await ask(user, "Q");
    expect(await screen.findByText("Model down (llm_unavailable)")).toBeInTheDocument();
  });

  it("opens a stored conversation with its citations", async () => {
    mockFetch({
      ...baseRoutes,
      "GET /api/v1/conversations": () =>
        jsonResponse({ conversations: [{ id: "conv9", title: "Router reset", updated_at: "2026-01-01T00:00:00Z" }] }),
      "GET /api/v1/conversations/conv9": () =>
        jsonResponse({
          id: "conv9",
          title: "Router reset",
          messages: [
            { id: "u1", role: "user", content: "How?", created_at: "x" },
            { id: "a1", role: "assistant", content: "Hold it [1].", citations: [CITATION], created_at: "x" },
          ],
        }),
    });
    const user = userEvent.setup();
    render(<ChatPage />);
    await user.click(await screen.findByRole("button", { name: "Router reset" }));
    expect(await screen.findByText("How?")).toBeInTheDocument();
    expect(screen.getAllByRole("button", { name: "Citation 1: Router Manual" })).toHaveLength(2);
    expect(screen.getByRole("button", { name: "Helpful" })).toBeInTheDocument();
  });
});

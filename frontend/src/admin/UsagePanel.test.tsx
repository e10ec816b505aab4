import { render, screen, within } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { UsagePanel } from "./UsagePanel";

describe("UsagePanel", () => {
  it("shows usage per actor, user or key, per day", async () => {
    mockFetch({
      "GET /api/v1/usage": () =>
        jsonResponse({
          usage: [
            { actor_kind: "user", actor_id: "u1", actor_name: "Ann Lee", day: "2026-01-02", requests: 7, prompt_tokens: 700, completion_tokens: 90 },
            { actor_kind: "key", actor_id: "k1", actor_name: "support bot", day: "2026-01-02", requests: 3, prompt_tokens: 300, completion_tokens: 60 },
          ],
        }),
    });
    render(<UsagePanel />);
    const ann = (await screen.findByRole("cell", { name: "Ann Lee" })).closest("tr")!;
    expect(within(ann).getByRole("cell", { name: "user" })).toBeInTheDocument();
    expect(within(ann).getByRole("cell", { name: "700" })).toBeInTheDocument();
    const bot = screen.getByRole("cell", { name: "support bot" }).closest("tr")!;
    expect(within(bot).getByRole("cell", { name: "API key" })).toBeInTheDocument();
    expect(screen.queryByText("No usage recorded yet.")).toBeNull();
  });
});

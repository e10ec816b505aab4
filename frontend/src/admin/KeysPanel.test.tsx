import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { ApiKey } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { KeysPanel } from "./KeysPanel";

describe("KeysPanel", () => {
  it("creates a key, shows its secret once, and revokes keys", async () => {
    const keys: ApiKey[] = [
      { id: "k1", name: "ops", role: "admin", prefix: "kbqa_ab", created_at: "2026-01-01T00:00:00Z", last_used_at: null, revoked: false },
    ];
    const created: unknown[] = [];
    mockFetch({
      "GET /api/v1/keys": () => jsonResponse({ keys }),
      "POST /api/v1/keys": ({ init }) => {
        const body = JSON.parse(init.body as string);
        created.push(body);
        const k = { id: "k2", prefix: "kbqa_cd", created_at: "2026-01-02T00:00:00Z", last_used_at: null, revoked: false, ...body };
        keys.push(k);
        return jsonResponse({ ...k, key: "kbqa_cd_SECRET" }, 201);
      },
      "DELETE /api/v1/keys/k1": () => {
        keys[0] = { ...keys[0], revoked: true };
        return jsonResponse(null, 204);
      },
    });
    const user = userEvent.setup();
    render(<KeysPanel />);
    expect(await screen.findByText("ops")).toBeInTheDocument();
    expect(screen.getByText("never")).toBeInTheDocument();

    await user.type(screen.getByLabelText("Name"), "support bot");
    await user.selectOptions(screen.getByLabelText("Role"), "agent");
    await user.click(screen.getByRole("button", { name: "Create key" }));
    expect(await screen.findByText("kbqa_cd_SECRET")).toBeInTheDocument();
    expect(created).toEqual([{ name: "support bot", role: "agent" }]);
    expect(await screen.findByRole("cell", { name: "support bot" })).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Done" }));
    expect(screen.queryByText("kbqa_cd_SECRET")).toBeNull();

    await user.click(screen.getByRole("button", { name: "Revoke ops" }));
    const row = (await screen.findByText("revoked")).closest("tr")!;
    await waitFor(() => expect(within(row).getByText("ops")).toBeInTheDocument());
  });

  it("disables Create key while the create request runs", async () => {
    let finish!: () => void;
    const posts: unknown[] = [];
    mockFetch({
      "GET /api/v1/keys": () => jsonResponse({ keys: [] }),
      "POST /api/v1/keys": ({ init }) => {
        posts.push(JSON.parse(init.body as string));
        return new Promise<Response>((resolve) => {
          finish = () =>
            resolve(
              jsonResponse(
                { id: "k9", name: "bot", role: "agent", prefix: "kbqa_zz", created_at: "2026-01-02T00:00:00Z", last_used_at: null, revoked: false, key: "kbqa_zz_SECRET" },
                201,
              ),
            );
        });
      },
    });
    const user = userEvent.setup();
    render(<KeysPanel />);
    const button = screen.getByRole("button", { name: "Create key" });
    await user.type(screen.getByLabelText("Name"), "bot");
    expect(button).toBeEnabled();
    await user.click(button);
    await waitFor(() => expect(posts).toHaveLength(1));
    expect(button).toBeDisabled(); // the name is still filled in: only the pending request disables it
    await user.type(screen.getByLabelText("Name"), "{Enter}");
    expect(posts).toHaveLength(1);

    finish();
    expect(await screen.findByText("kbqa_zz_SECRET")).toBeInTheDocument();
    await user.type(screen.getByLabelText("Name"), "another");
    expect(button).toBeEnabled();
  });
});

import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it } from "vitest";
import { jsonResponse, mockFetch } from "./test/fetchMock";
import { App, canAccess } from "./App";

afterEach(() => localStorage.clear());

describe("App", () => {
  it("shows the login screen without probing when never signed in, then the pages the role allows", async () => {
    const { calls } = mockFetch({
      "POST /api/v1/auth/session": () =>
        jsonResponse({ csrf_token: "c", role: "editor", tenant: "acme", key_name: "ed" }),
      "GET /api/v1/conversations": () => jsonResponse({ conversations: [] }),
    });
    const user = userEvent.setup();
    render(<App />);
    expect(await screen.findByLabelText("API key")).toBeInTheDocument();
    expect(calls).toHaveLength(0);
    await user.type(screen.getByLabelText("API key"), "kbqa_secret{Enter}");
    expect(await screen.findByRole("button", { name: "Documents" })).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Admin" })).toBeNull();
    expect(screen.getByText("ed · editor · acme")).toBeInTheDocument();
  });

  it("restores a session via /auth/me when signed in before", async () => {
    localStorage.setItem("kbqa.signedIn", "1");
    mockFetch({
      "GET /api/v1/auth/me": () => jsonResponse({ csrf_token: "c", role: "admin", tenant: "t", key_name: "root" }),
      "GET /api/v1/conversations": () => jsonResponse({ conversations: [] }),
    });
    render(<App />);
    expect(await screen.findByRole("button", { name: "Admin" })).toBeInTheDocument();
  });

  it("gates pages by role", () => {
    expect(canAccess("agent", "documents")).toBe(false);
    expect(canAccess("editor", "documents")).toBe(true);
    expect(canAccess("editor", "admin")).toBe(false);
    expect(canAccess("admin", "admin")).toBe(true);
  });
});

import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it } from "vitest";
import { jsonResponse, mockFetch } from "./test/fetchMock";
import { App, canAccess } from "./App";

afterEach(() => localStorage.clear());

describe("App", () => {
  it("shows the login screen without probing when never signed in, then the pages the role allows", async () => {
    const { calls } = mockFetch({
      "POST /api/v1/auth/session": () =>
        jsonResponse({ csrf_token: "c", role: "editor", tenant: "acme", kind: "key", name: "ed", key_name: "ed" }),
      "GET /api/v1/conversations": () => jsonResponse({ conversations: [] }),
      "GET /api/v1/auth/methods": () => jsonResponse({ password: true, sso: false, sso_login_url: null }),
    });
    const user = userEvent.setup();
    render(<App />);
    expect(await screen.findByLabelText("Email")).toBeInTheDocument();
    // Only the public list of login methods: no /auth/me probe (it would answer 401) before anyone signed in. The
    // methods are fetched in an effect after the form is shown: on a busy machine the call comes a moment later.
    await waitFor(() =>
      expect(calls.map((c) => `${c.method} ${new URL(c.url, "http://x").pathname}`)).toEqual(["GET /api/v1/auth/methods"]),
    );
    await user.click(screen.getByRole("button", { name: "Sign in with an API key" }));
    await user.type(screen.getByLabelText("API key"), "kbqa_secret{Enter}");
    expect(await screen.findByRole("button", { name: "Documents" })).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Admin" })).toBeNull();
    expect(screen.getByText("ed · editor · acme")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Change password" })).toBeNull(); // keys have no password
  });

  it("lands on the login page with the reason when single sign-on failed, and cleans the address", async () => {
    localStorage.setItem("kbqa.signedIn", "1"); // set when the browser left for the provider
    window.history.replaceState(null, "", "/?sso_error=no_account");
    mockFetch({
      "GET /api/v1/auth/me": () => jsonResponse({ error: { code: "unauthenticated", message: "not signed in" } }, 401),
      "GET /api/v1/auth/methods": () =>
        jsonResponse({ password: true, sso: true, sso_login_url: "/api/v1/auth/oidc/login" }),
    });
    render(<App />);
    expect(await screen.findByRole("heading", { name: "Single sign-on did not complete" })).toBeInTheDocument();
    expect(screen.getByText(/no account for you here/)).toBeInTheDocument();
    expect(await screen.findByRole("link", { name: "Try again" })).toBeInTheDocument();
    expect(window.location.search).toBe("");
  });

  it("restores a session via /auth/me when signed in before", async () => {
    localStorage.setItem("kbqa.signedIn", "1");
    mockFetch({
      "GET /api/v1/auth/me": () =>
        jsonResponse({ csrf_token: "c", role: "admin", tenant: "t", kind: "key", name: "root", key_name: "root" }),
      "GET /api/v1/conversations": () => jsonResponse({ conversations: [] }),
    });
    render(<App />);
    expect(await screen.findByRole("button", { name: "Admin" })).toBeInTheDocument();
  });

  it("lets a signed-in user change their password", async () => {
    localStorage.setItem("kbqa.signedIn", "1");
    const changes: unknown[] = [];
    let signedOut = false;
    mockFetch({
      "GET /api/v1/auth/me": () =>
        jsonResponse({ csrf_token: "c", role: "agent", tenant: "t", kind: "user", name: "Ann Lee", key_name: "Ann Lee" }),
      "GET /api/v1/conversations": () => jsonResponse({ conversations: [] }),
      "POST /api/v1/auth/password": ({ init }) => {
        const body = JSON.parse(init.body as string) as { current_password: string };
        changes.push(body);
        return body.current_password === "old password"
          ? jsonResponse(null, 204)
          : jsonResponse({ error: { code: "unauthenticated", message: "current password is wrong" } }, 401);
      },
      "DELETE /api/v1/auth/session": () => {
        signedOut = true;
        return jsonResponse(null, 204);
      },
    });
    const user = userEvent.setup();
    render(<App />);
    expect(await screen.findByText("Ann Lee · agent · t")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Change password" }));
    const dialog = screen.getByRole("dialog", { name: "Change password" });
    expect(screen.getByLabelText("Current password")).toHaveFocus();
    await user.type(screen.getByLabelText("Current password"), "guess");
    await user.type(screen.getByLabelText("New password"), "short");
    expect(screen.getByRole("alert")).toHaveTextContent("at least 10 characters");
    await user.type(screen.getByLabelText("New password"), " but long now");
    await user.type(screen.getByLabelText("Confirm new password"), "short but long");
    expect(screen.getByRole("alert")).toHaveTextContent("differ");
    await user.type(screen.getByLabelText("Confirm new password"), " now");
    await user.click(within(dialog).getByRole("button", { name: "Change password" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("current password is wrong");
    expect(screen.getByText("Ann Lee · agent · t")).toBeInTheDocument(); // a refused change is not a sign-out
    await user.clear(screen.getByLabelText("Current password"));
    await user.type(screen.getByLabelText("Current password"), "old password");
    await user.click(within(dialog).getByRole("button", { name: "Change password" }));
    expect(await screen.findByText("Password changed.")).toBeInTheDocument();
    expect(changes.at(-1)).toEqual({ current_password: "old password", new_password: "short but long now" });
    await user.keyboard("{Escape}");
    expect(screen.queryByRole("dialog")).toBeNull();
    expect(screen.getByRole("button", { name: "Change password" })).toHaveFocus();
    expect(signedOut).toBe(false);
  });

  it("gates pages by role", () => {
    expect(canAccess("agent", "documents")).toBe(false);
    expect(canAccess("editor", "documents")).toBe(true);
    expect(canAccess("editor", "admin")).toBe(false);
    expect(canAccess("admin", "admin")).toBe(true);
  });
});

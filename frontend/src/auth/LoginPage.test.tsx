import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it, vi } from "vitest";
import { setCsrfToken } from "../api/client";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { LoginPage, SSO_ERRORS, ssoErrorMessage, takeSsoError } from "./LoginPage";

afterEach(() => {
  setCsrfToken(null);
  localStorage.clear();
});

const SESSION = { csrf_token: "c", role: "editor", tenant: "acme", kind: "user", name: "Ann Lee", key_name: "Ann Lee" };

describe("LoginPage", () => {
  it("signs in with email and password by default", async () => {
    const { calls } = mockFetch({ "POST /api/v1/auth/session": () => jsonResponse(SESSION) });
    const onLogin = vi.fn();
    const user = userEvent.setup();
    render(<LoginPage onLogin={onLogin} />);
    expect(screen.queryByLabelText("API key")).toBeNull();
    expect(screen.getByRole("button", { name: "Sign in" })).toBeDisabled();
    await user.type(screen.getByLabelText("Email"), " ann@example.com ");
    await user.type(screen.getByLabelText("Password"), "correct horse{Enter}");
    expect(onLogin).toHaveBeenCalledWith(SESSION);
    const sessions = calls.filter((c) => c.url.endsWith("/auth/session"));
    expect(sessions).toHaveLength(1);
    expect(JSON.parse(sessions[0].init.body as string)).toEqual({ email: "ann@example.com", password: "correct horse" });
  });

  it("shows the server's message when the credentials are refused, and clears the password", async () => {
    mockFetch({
      "POST /api/v1/auth/session": () =>
        jsonResponse({ error: { code: "unauthenticated", message: "invalid email or password" } }, 401),
    });
    const onLogin = vi.fn();
    const user = userEvent.setup();
    render(<LoginPage onLogin={onLogin} />);
    await user.type(screen.getByLabelText("Email"), "ann@example.com");
    await user.type(screen.getByLabelText("Password"), "wrong");
    await user.click(screen.getByRole("button", { name: "Sign in" }));
    expect(await screen.findByRole("alert")).toHaveTextContent("invalid email or password");
    expect(screen.getByLabelText("Password")).toHaveValue("");
    expect(onLogin).not.toHaveBeenCalled();
  });

  it("switches to API key sign-in and back", async () => {
    const { calls } = mockFetch({ "POST /api/v1/auth/session": () => jsonResponse({ ...SESSION, kind: "key" }) });
    const onLogin = vi.fn();
    const user = userEvent.setup();
    render(<LoginPage onLogin={onLogin} />);
    await user.click(screen.getByRole("button", { name: "Sign in with an API key" }));
    expect(screen.queryByLabelText("Email")).toBeNull();
    expect(screen.getByLabelText("API key")).toHaveFocus();
    await user.type(screen.getByLabelText("API key"), "kbqa_secret{Enter}");
    const session = calls.find((c) => c.url.endsWith("/auth/session"));
    expect(JSON.parse(session?.init.body as string)).toEqual({ api_key: "kbqa_secret" });
    expect(onLogin).toHaveBeenCalledTimes(1);
    await user.click(screen.getByRole("button", { name: "Sign in with email and password" }));
    expect(screen.getByLabelText("Email")).toBeInTheDocument();
  });

  it("sends the tenant when one is given", async () => {
    const { calls } = mockFetch({ "POST /api/v1/auth/session": () => jsonResponse(SESSION) });
    const user = userEvent.setup();
    render(<LoginPage onLogin={vi.fn()} />);
    await user.type(screen.getByLabelText("Email"), "ann@example.com");
    await user.type(screen.getByLabelText("Password"), "correct horse");
    await user.type(screen.getByLabelText("Tenant (optional)"), " acme {Enter}");
    const login = calls.find((c) => c.url.endsWith("/auth/session"));
    expect(JSON.parse(login?.init.body as string)).toEqual({
      email: "ann@example.com",
      password: "correct horse",
      tenant: "acme",
    });
  });

  it("offers no SSO button when the server has no single sign-on", async () => {
    const { calls } = mockFetch({
      "GET /api/v1/auth/methods": () => jsonResponse({ password: true, sso: false, sso_login_url: null }),
    });
    render(<LoginPage onLogin={vi.fn()} />);
    await vi.waitFor(() => expect(calls.some((c) => c.url.endsWith("/auth/methods"))).toBe(true));
    expect(screen.queryByRole("button", { name: "Sign in with SSO" })).toBeNull();
    expect(screen.getByLabelText("Email")).toBeInTheDocument();
  });

  it("signs in with SSO when the server offers it: leaves for the provider and remembers to look for the session", async () => {
    mockFetch({
      "GET /api/v1/auth/methods": () =>
        jsonResponse({ password: true, sso: true, sso_login_url: "/api/v1/auth/oidc/login" }),
    });
    const navigate = vi.fn();
    const user = userEvent.setup();
    render(<LoginPage onLogin={vi.fn()} navigate={navigate} />);
    await user.click(await screen.findByRole("button", { name: "Sign in with SSO" }));
    expect(navigate).toHaveBeenCalledWith("/api/v1/auth/oidc/login");
    expect(localStorage.getItem("kbqa.signedIn")).not.toBeNull();
    expect(screen.getByLabelText("Email")).toBeInTheDocument(); // passwords still work alongside
  });

  it("hides email and password when the server turned password login off", async () => {
    mockFetch({
      "GET /api/v1/auth/methods": () =>
        jsonResponse({ password: false, sso: true, sso_login_url: "/api/v1/auth/oidc/login" }),
    });
    render(<LoginPage onLogin={vi.fn()} />);
    expect(await screen.findByRole("button", { name: "Sign in with SSO" })).toBeInTheDocument();
    expect(screen.queryByLabelText("Email")).toBeNull();
    expect(screen.getByLabelText("API key")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Sign in with email and password" })).toBeNull();
  });

  it("explains a failed single sign-on and offers to try again", async () => {
    mockFetch({
      "GET /api/v1/auth/methods": () =>
        jsonResponse({ password: true, sso: true, sso_login_url: "/api/v1/auth/oidc/login" }),
    });
    const navigate = vi.fn();
    const user = userEvent.setup();
    render(<LoginPage onLogin={vi.fn()} navigate={navigate} ssoError="denied" />);
    expect(screen.getByRole("heading", { name: "Single sign-on did not complete" })).toBeInTheDocument();
    expect(screen.getByRole("alert")).toHaveTextContent("cancelled or refused at your identity provider");
    const retry = await screen.findByRole("link", { name: "Try again" });
    expect(retry).toHaveAttribute("href", "/api/v1/auth/oidc/login");
    await user.click(retry);
    expect(navigate).toHaveBeenCalledWith("/api/v1/auth/oidc/login");
    expect(localStorage.getItem("kbqa.signedIn")).not.toBeNull();
  });

  it("shows only its own texts for failure reasons, whatever the address says", () => {
    for (const reason of ["state", "expired", "denied", "provider", "no_account", "disabled"]) {
      expect(ssoErrorMessage(reason)).toBe(SSO_ERRORS[reason]);
    }
    expect(ssoErrorMessage("<b>call 555-0100 for help</b>")).toBe(SSO_ERRORS.provider);
    expect(ssoErrorMessage("constructor")).toBe(SSO_ERRORS.provider);
  });

  it("takes the failure reason out of the address", () => {
    const replaceState = vi.fn();
    const hist = { state: null, replaceState } as unknown as History;
    const reason = takeSsoError({ href: "http://kb.example/?x=1&sso_error=expired#top" } as Location, hist);
    expect(reason).toBe("expired");
    expect(replaceState).toHaveBeenCalledWith(null, "", "/?x=1#top");
    expect(takeSsoError({ href: "http://kb.example/" } as Location, hist)).toBeNull();
    expect(replaceState).toHaveBeenCalledTimes(1);
  });
});

import { useEffect, useRef, useState } from "react";
import { type LoginMethods, login, loginMethods, loginWithPassword, startSso } from "../api/client";
import type { Session } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { useAction } from "../ui/useAction";

type Mode = "password" | "key";

const DEFAULT_METHODS: LoginMethods = { password: true, sso: false, sso_login_url: null };

/**
 * What each `sso_error` reason the server's callback sends a browser back with means (app.services.sso.Failure). The
 * page shows only these fixed texts, never text from the address, so a crafted link cannot put words on it.
 */
export const SSO_ERRORS: Record<string, string> = {
  state:
    "This sign-in link is no longer valid: it was used already, or the sign-in was started in another browser. " +
    "Start again from here.",
  expired: "The sign-in took too long at your identity provider and expired.",
  denied: "The sign-in was cancelled or refused at your identity provider.",
  provider:
    "Your identity provider's answer could not be checked, so you are not signed in. If this keeps happening, tell " +
    "an administrator.",
  no_account:
    "Your identity provider signed you in, but there is no account for you here. Ask an administrator for access.",
  disabled: "Your account here is disabled. Ask an administrator.",
};

export function ssoErrorMessage(reason: string): string {
  return Object.hasOwn(SSO_ERRORS, reason) ? SSO_ERRORS[reason] : SSO_ERRORS.provider;
}

/**
 * The `sso_error` the server's callback put in the address (null when none), taken out of the address so a reload
 * or a bookmark does not show it again.
 */
export function takeSsoError(loc: Location = window.location, hist: History = window.history): string | null {
  const url = new URL(loc.href);
  const reason = url.searchParams.get("sso_error");
  if (reason === null) return null;
  url.searchParams.delete("sso_error");
  hist.replaceState(hist.state, "", `${url.pathname}${url.search}${url.hash}`);
  return reason;
}

/**
 * Sign in with email and password (people), with single sign-on when the server has a provider configured, or with
 * an API key (tools, service accounts). Each opens a browser session: an httpOnly cookie plus a CSRF token. The
 * optional tenant picks the account when one email and password open accounts in several tenants.
 */
export function LoginPage({
  onLogin,
  navigate,
  ssoError,
}: {
  onLogin: (s: Session) => void;
  /** Where single sign-on sends the browser (tests pass a spy; the app leaves the page). */
  navigate?: (url: string) => void;
  /** Why the last single sign-on did not complete (the callback's `sso_error`), shown with a way to try again. */
  ssoError?: string | null;
}) {
  const [methods, setMethods] = useState<LoginMethods>(DEFAULT_METHODS);
  const [mode, setMode] = useState<Mode>("password");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [tenant, setTenant] = useState("");
  const [key, setKey] = useState("");
  const { run, busy, error, setError } = useAction();
  const firstField = useRef<HTMLInputElement>(null);

  useEffect(() => {
    let live = true;
    loginMethods().then((m) => {
      if (!live) return;
      setMethods(m);
      if (!m.password) setMode("key");
    });
    return () => {
      live = false;
    };
  }, []);

  useEffect(() => firstField.current?.focus(), [mode]);

  const ready = mode === "password" ? email.trim() !== "" && password !== "" : key.trim() !== "";

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (!ready || busy) return;
    const ok = await run(async () =>
      onLogin(
        mode === "password"
          ? await loginWithPassword(email.trim(), password, tenant.trim() || undefined)
          : await login(key.trim()),
      ),
    );
    if (!ok && mode === "password") setPassword("");
  }

  function switchTo(next: Mode) {
    setMode(next);
    setError(null);
  }

  return (
    <main className="login">
      <h1>kbqa</h1>
      {ssoError && (
        <section className="banner banner-error sso-error" aria-labelledby="sso-error-title">
          <h2 id="sso-error-title">Single sign-on did not complete</h2>
          <p role="alert">{ssoErrorMessage(ssoError)}</p>
          {methods.sso && methods.sso_login_url && (
            <a
              href={methods.sso_login_url}
              onClick={(e) => {
                e.preventDefault();
                startSso(methods.sso_login_url as string, navigate);
              }}
            >
              Try again
            </a>
          )}
        </section>
      )}
      {methods.sso && methods.sso_login_url && (
        <button
          type="button"
          className="primary sso"
          onClick={() => startSso(methods.sso_login_url as string, navigate)}
        >
          Sign in with SSO
        </button>
      )}
      <form onSubmit={submit}>
        {mode === "password" ? (
          <>
            <label htmlFor="login-email">Email</label>
            <input
              id="login-email"
              type="email"
              autoComplete="username"
              ref={firstField}
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
            <label htmlFor="login-password">Password</label>
            <input
              id="login-password"
              type="password"
              autoComplete="current-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
            <label htmlFor="login-tenant">Tenant (optional)</label>
            <input
              id="login-tenant"
              type="text"
              autoComplete="organization"
              placeholder="only if your email is used in several tenants"
              value={tenant}
              onChange={(e) => setTenant(e.target.value)}
            />
          </>
        ) : (
          <>
            <label htmlFor="api-key">API key</label>
            <input
              id="api-key"
              type="password"
              autoComplete="off"
              ref={firstField}
              value={key}
              onChange={(e) => setKey(e.target.value)}
            />
          </>
        )}
        <button type="submit" className={methods.sso ? undefined : "primary"} disabled={busy || !ready}>
          Sign in
        </button>
        <ErrorAlert message={error} />
      </form>
      {methods.password && (
        <button
          type="button"
          className="link switch-mode"
          onClick={() => switchTo(mode === "password" ? "key" : "password")}
        >
          {mode === "password" ? "Sign in with an API key" : "Sign in with email and password"}
        </button>
      )}
    </main>
  );
}

import { useEffect, useRef, useState } from "react";
import { login, loginWithPassword } from "../api/client";
import type { Session } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { useAction } from "../ui/useAction";

type Mode = "password" | "key";

/**
 * Sign in with email and password (people), or with an API key (tools, service accounts). Either opens a browser
 * session: an httpOnly cookie plus a CSRF token.
 */
export function LoginPage({ onLogin }: { onLogin: (s: Session) => void }) {
  const [mode, setMode] = useState<Mode>("password");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [key, setKey] = useState("");
  const { run, busy, error, setError } = useAction();
  const firstField = useRef<HTMLInputElement>(null);

  useEffect(() => firstField.current?.focus(), [mode]);

  const ready = mode === "password" ? email.trim() !== "" && password !== "" : key.trim() !== "";

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (!ready || busy) return;
    const ok = await run(async () =>
      onLogin(mode === "password" ? await loginWithPassword(email.trim(), password) : await login(key.trim())),
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
        <button type="submit" className="primary" disabled={busy || !ready}>
          Sign in
        </button>
        <ErrorAlert message={error} />
      </form>
      <button type="button" className="link switch-mode" onClick={() => switchTo(mode === "password" ? "key" : "password")}>
        {mode === "password" ? "Sign in with an API key" : "Sign in with email and password"}
      </button>
    </main>
  );
}

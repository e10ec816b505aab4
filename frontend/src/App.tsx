import { useEffect, useRef, useState } from "react";
import { currentSession, errorMessage, logout, sessionName, setUnauthorizedHandler } from "./api/client";
import type { Role, Session } from "./api/types";
import { AdminPage } from "./admin/AdminPage";
import { ChangePasswordDialog } from "./auth/ChangePassword";
import { LoginPage, takeSsoError } from "./auth/LoginPage";
import { ChatPage } from "./chat/ChatPage";
import { ReviewPage } from "./review/ReviewPage";
import { ErrorAlert } from "./ui/ErrorAlert";
import { DocumentsPage } from "./upload/DocumentsPage";

type Page = "chat" | "documents" | "review" | "admin";

const RANK: Record<Role, number> = { agent: 0, editor: 1, admin: 2 };

export function canAccess(role: Role, page: Page): boolean {
  if (page === "documents" || page === "review") return RANK[role] >= RANK.editor;
  if (page === "admin") return role === "admin";
  return true;
}

const LABELS: Record<Page, string> = { chat: "Chat", documents: "Documents", review: "Review", admin: "Admin" };

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [page, setPage] = useState<Page>("chat");
  const [error, setError] = useState<string | null>(null);
  const [changingPassword, setChangingPassword] = useState(false);
  // Why the single sign-on that sent the browser back here failed (once: the address is cleaned).
  const [ssoError, setSsoError] = useState<string | null>(takeSsoError);
  const passwordButton = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    setUnauthorizedHandler(() => setSession(null));
    currentSession().then(setSession, (e: unknown) => {
      setError(errorMessage(e));
      setSession(null);
    });
    return () => setUnauthorizedHandler(null);
  }, []);

  if (session === undefined) return <p className="muted center">Loading…</p>;
  if (session === null)
    return (
      <>
        <ErrorAlert message={error} className="center" />
        <LoginPage
          ssoError={ssoError}
          onLogin={(s) => {
            setError(null);
            setSsoError(null);
            setPage("chat");
            setChangingPassword(false);
            setSession(s);
          }}
        />
      </>
    );

  const pages = (Object.keys(LABELS) as Page[]).filter((p) => canAccess(session.role, p));
  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">kbqa</span>
        <nav aria-label="Main">
          {pages.map((p) => (
            <button
              key={p}
              type="button"
              className="tab"
              aria-current={page === p ? "page" : undefined}
              onClick={() => setPage(p)}
            >
              {LABELS[p]}
            </button>
          ))}
        </nav>
        <span className="who">
          {sessionName(session)} · {session.role} · {session.tenant}
        </span>
        {session.kind === "user" && (
          <button
            type="button"
            ref={passwordButton}
            aria-expanded={changingPassword}
            onClick={() => setChangingPassword((open) => !open)}
          >
            Change password
          </button>
        )}
        <button type="button" onClick={() => void logout().catch(() => undefined).finally(() => setSession(null))}>
          Sign out
        </button>
      </header>
      {changingPassword && (
        <ChangePasswordDialog
          onClose={() => {
            setChangingPassword(false);
            passwordButton.current?.focus();
          }}
        />
      )}
      <main className="content">
        {page === "chat" && <ChatPage />}
        {page === "documents" && canAccess(session.role, "documents") && <DocumentsPage />}
        {page === "review" && canAccess(session.role, "review") && <ReviewPage canRun={session.role === "admin"} />}
        {page === "admin" && canAccess(session.role, "admin") && <AdminPage />}
      </main>
    </div>
  );
}

import { useCallback, useEffect, useState } from "react";
import { createUser, errorMessage, listUsers, updateUser } from "../api/client";
import { ROLES, type Role, type User, type UserPatch } from "../api/types";
import { MIN_PASSWORD_LENGTH } from "../auth/ChangePassword";
import { ErrorAlert } from "../ui/ErrorAlert";
import { formatTime } from "../ui/format";
import { Table } from "../ui/Table";
import { useAction } from "../ui/useAction";

export const splitGroups = (text: string) =>
  text
    .split(",")
    .map((g) => g.trim())
    .filter(Boolean);

const EMPTY = { email: "", name: "", role: "agent" as Role, groups: "", password: "" };

function CreateUserForm({ onCreated }: { onCreated: (u: User) => void }) {
  const [form, setForm] = useState(EMPTY);
  const { run, busy, error } = useAction();
  const set = (field: keyof typeof EMPTY) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setForm((f) => ({ ...f, [field]: e.target.value }));
  const ready = form.email.trim() && form.name.trim() && form.password.length >= MIN_PASSWORD_LENGTH && !busy;

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (!ready) return;
    await run(async () => {
      const user = await createUser({
        email: form.email.trim(),
        name: form.name.trim(),
        role: form.role,
        acl_groups: splitGroups(form.groups),
        password: form.password,
      });
      setForm(EMPTY);
      onCreated(user);
    });
  }

  return (
    <form className="grid-form" onSubmit={submit} aria-label="Create user">
      <label htmlFor="user-email">Email</label>
      <input id="user-email" type="email" autoComplete="off" value={form.email} onChange={set("email")} />
      <label htmlFor="user-name">Name</label>
      <input id="user-name" autoComplete="off" value={form.name} onChange={set("name")} />
      <label htmlFor="user-role">Role</label>
      <select id="user-role" value={form.role} onChange={set("role")}>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      <label htmlFor="user-groups">Groups (comma-separated)</label>
      <input id="user-groups" autoComplete="off" value={form.groups} onChange={set("groups")} />
      <label htmlFor="user-password">Initial password</label>
      <input
        id="user-password"
        type="password"
        autoComplete="new-password"
        aria-describedby="user-password-hint"
        value={form.password}
        onChange={set("password")}
      />
      <span id="user-password-hint" className="muted hint">
        At least {MIN_PASSWORD_LENGTH} characters; share it privately.
      </span>
      <button type="submit" className="primary" disabled={!ready}>
        Create user
      </button>
      <ErrorAlert message={error} />
    </form>
  );
}

function ResetPasswordForm({ user, onDone }: { user: User; onDone: (message: string | null) => void }) {
  const [password, setPassword] = useState("");
  const { run, busy, error } = useAction();

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (password.length < MIN_PASSWORD_LENGTH || busy) return;
    await run(async () => {
      await updateUser(user.id, { password });
      onDone(`New password set for ${user.email}.`);
    });
  }

  return (
    <form
      className="inline-form banner"
      onSubmit={submit}
      aria-label={`Reset password for ${user.email}`}
      onKeyDown={(e) => {
        if (e.key === "Escape") onDone(null);
      }}
    >
      <label htmlFor="reset-password">New password for {user.email}</label>
      <input
        id="reset-password"
        type="password"
        autoComplete="new-password"
        autoFocus
        minLength={MIN_PASSWORD_LENGTH}
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      <button type="submit" className="primary" disabled={password.length < MIN_PASSWORD_LENGTH || busy}>
        Set password
      </button>
      <button type="button" onClick={() => onDone(null)}>
        Cancel
      </button>
      <ErrorAlert message={error} />
    </form>
  );
}

/** People who sign in with email and password: create, change role, disable or enable, reset a password. */
export function UsersPanel() {
  const [users, setUsers] = useState<User[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [resetting, setResetting] = useState<User | null>(null);

  const refresh = useCallback(() => {
    listUsers().then(setUsers, (e: unknown) => setError(errorMessage(e)));
  }, []);
  useEffect(refresh, [refresh]);

  async function update(user: User, patch: UserPatch, message: string) {
    setError(null);
    setNotice(null);
    try {
      const updated = await updateUser(user.id, patch);
      setUsers((list) => list.map((u) => (u.id === updated.id ? updated : u)));
      setNotice(message);
    } catch (err) {
      setError(errorMessage(err));
      refresh(); // show what the server kept, e.g. the old role after a refused self-demotion
    }
  }

  return (
    <section aria-labelledby="users-heading">
      <h2 id="users-heading">Users and roles</h2>
      <CreateUserForm
        onCreated={(u) => {
          setError(null);
          setNotice(`Created ${u.email}.`);
          setUsers((list) => [...list.filter((x) => x.id !== u.id), u]);
        }}
      />
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      <ErrorAlert message={error} />
      {resetting && (
        <ResetPasswordForm
          key={resetting.id}
          user={resetting}
          onDone={(message) => {
            setResetting(null);
            if (message) setNotice(message);
          }}
        />
      )}
      <Table
        label="Users"
        columns={[
          "Email",
          "Name",
          "Role",
          "Groups",
          "Last login",
          "Status",
          <span className="visually-hidden">Actions</span>,
        ]}
      >
        {users.map((u) => (
          <tr key={u.id} className={u.disabled ? "row-disabled" : undefined}>
            <td className="wrap">{u.email}</td>
            <td>{u.name || <span className="muted">—</span>}</td>
            <td>
              <select
                aria-label={`Role of ${u.email}`}
                value={u.role}
                onChange={(e) => {
                  const role = e.target.value as Role;
                  void update(u, { role }, `${u.email} is now ${role}.`);
                }}
              >
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </td>
            <td>{u.acl_groups.length ? u.acl_groups.join(", ") : <span className="muted">none</span>}</td>
            <td>{formatTime(u.last_login_at)}</td>
            <td>
              <span className="status" data-status={u.disabled ? "disabled" : "active"}>
                {u.disabled ? "disabled" : "active"}
              </span>
            </td>
            <td>
              <div className="actions">
                <button
                  type="button"
                  className={u.disabled ? undefined : "danger"}
                  aria-label={`${u.disabled ? "Enable" : "Disable"} ${u.email}`}
                  onClick={() =>
                    void update(u, { disabled: !u.disabled }, `${u.email} ${u.disabled ? "enabled" : "disabled"}.`)
                  }
                >
                  {u.disabled ? "Enable" : "Disable"}
                </button>
                <button
                  type="button"
                  aria-label={`Reset password for ${u.email}`}
                  onClick={() => {
                    setNotice(null);
                    setResetting(u);
                  }}
                >
                  Reset password
                </button>
              </div>
            </td>
          </tr>
        ))}
      </Table>
      {users.length === 0 && !error && <p className="muted">No users yet.</p>}
    </section>
  );
}

import { useCallback, useEffect, useState } from "react";
import { createKey, errorMessage, listKeys, revokeKey } from "../api/client";
import { ROLES, type ApiKey, type CreatedKey, type Role } from "../api/types";
import { ErrorAlert } from "../ui/ErrorAlert";
import { formatTime as when } from "../ui/format";
import { Table } from "../ui/Table";
import { useAction } from "../ui/useAction";

/** API keys: create (the secret is shown once), revoke, last use. */
export function KeysPanel() {
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("agent");
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const { run, busy, error, setError } = useAction();

  const refresh = useCallback(() => {
    listKeys().then(setKeys, (e: unknown) => setError(errorMessage(e)));
  }, []);
  useEffect(refresh, [refresh]);

  async function create(e: React.FormEvent) {
    e.preventDefault();
    if (busy) return;
    await run(async () => {
      setCreated(await createKey(name.trim(), role));
      setName("");
      refresh();
    });
  }

  async function revoke(id: string) {
    await run(() => revokeKey(id));
    refresh();
  }

  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      <form className="inline-form" onSubmit={create}>
        <label htmlFor="key-name">Name</label>
        <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} />
        <label htmlFor="key-role">Role</label>
        <select id="key-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
        <button type="submit" className="primary" disabled={busy || !name.trim()}>
          Create key
        </button>
      </form>
      {created && (
        <div className="banner" role="status">
          New key <strong>{created.name}</strong> — copy it now, it is shown only once:{" "}
          <code className="secret">{created.key}</code>{" "}
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      <ErrorAlert message={error} />
      <Table label="API keys" columns={["Name", "Role", "Prefix", "Created", "Last used", "State"]}>
        {keys.map((k) => (
          <tr key={k.id}>
            <td>{k.name}</td>
            <td>{k.role}</td>
            <td>
              <code>{k.prefix}</code>
            </td>
            <td>{when(k.created_at)}</td>
            <td>{when(k.last_used_at)}</td>
            <td>
              {k.revoked ? (
                "revoked"
              ) : (
                <button type="button" className="danger" onClick={() => void revoke(k.id)} aria-label={`Revoke ${k.name}`}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

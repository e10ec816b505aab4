import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { User } from "../api/types";
import { jsonResponse, mockFetch } from "../test/fetchMock";
import { UsersPanel } from "./UsersPanel";

const user = (id: string, email: string, extra: Partial<User> = {}): User => ({
  id,
  email,
  name: email.split("@")[0],
  role: "agent",
  acl_groups: [],
  created_at: "2026-01-01T00:00:00Z",
  last_login_at: null,
  disabled: false,
  ...extra,
});

/** An in-memory /users endpoint that refuses duplicate emails and an admin demoting themselves (id u1). */
function fakeUsersApi(initial: User[]) {
  const users = [...initial];
  const posted: unknown[] = [];
  const patched: { id: string; body: Record<string, unknown> }[] = [];
  const { calls } = mockFetch({
    "GET /api/v1/users": () => jsonResponse({ users }),
    "POST /api/v1/users": ({ init }) => {
      const body = JSON.parse(init.body as string) as User & { password: string };
      posted.push(body);
      if (users.some((u) => u.email === body.email))
        return jsonResponse({ error: { code: "conflict", message: `a user with email ${body.email} exists` } }, 409);
      const { password: _secret, ...fields } = body;
      const created = user(`u${users.length + 1}`, body.email, fields);
      users.push(created);
      return jsonResponse(created, 201);
    },
    ...Object.fromEntries(
      ["u1", "u2"].map((id) => [
        `PATCH /api/v1/users/${id}`,
        ({ init }: { init: RequestInit }) => {
          const body = JSON.parse(init.body as string) as Record<string, unknown>;
          patched.push({ id, body });
          if (id === "u1" && (body.role !== undefined || body.disabled !== undefined))
            return jsonResponse({ error: { code: "conflict", message: "you cannot demote or disable yourself" } }, 409);
          const i = users.findIndex((u) => u.id === id);
          const { password: _secret, ...fields } = body;
          users[i] = { ...users[i], ...fields };
          return jsonResponse(users[i]);
        },
      ]),
    ),
  });
  return { users, posted, patched, calls };
}

describe("UsersPanel", () => {
  it("lists users with role, groups, last login and status", async () => {
    fakeUsersApi([
      user("u1", "root@example.com", { role: "admin", last_login_at: "2026-02-01T10:00:00Z" }),
      user("u2", "ann@example.com", { acl_groups: ["hr", "staff"], disabled: true }),
    ]);
    render(<UsersPanel />);
    expect(screen.getByRole("heading", { name: "Users and roles" })).toBeInTheDocument();
    const ann = (await screen.findByRole("cell", { name: "ann@example.com" })).closest("tr")!;
    expect(within(ann).getByRole("combobox", { name: "Role of ann@example.com" })).toHaveValue("agent");
    expect(within(ann).getByText("hr, staff")).toBeInTheDocument();
    expect(within(ann).getByText("never")).toBeInTheDocument();
    expect(within(ann).getByText("disabled")).toBeInTheDocument();
    expect(within(ann).getByRole("button", { name: "Enable ann@example.com" })).toBeInTheDocument();
    const root = screen.getByRole("cell", { name: "root@example.com" }).closest("tr")!;
    expect(within(root).getByRole("combobox")).toHaveValue("admin");
    expect(within(root).queryByText("never")).toBeNull();
    expect(within(root).getByText("active")).toBeInTheDocument();
  });

  it("creates a user, and shows the conflict when the email exists", async () => {
    const api = fakeUsersApi([user("u1", "root@example.com", { role: "admin" })]);
    const ui = userEvent.setup();
    render(<UsersPanel />);
    await screen.findByRole("cell", { name: "root@example.com" });
    const form = screen.getByRole("form", { name: "Create user" });
    await ui.type(within(form).getByLabelText("Email"), "ben@example.com");
    await ui.type(within(form).getByLabelText("Name"), "Ben Ode");
    await ui.selectOptions(within(form).getByLabelText("Role"), "editor");
    await ui.type(within(form).getByLabelText("Groups (comma-separated)"), "sales, , emea ");
    await ui.type(within(form).getByLabelText("Initial password"), "short");
    const create = within(form).getByRole("button", { name: "Create user" });
    expect(create).toBeDisabled();
    await ui.type(within(form).getByLabelText("Initial password"), " but fine");
    await ui.click(create);
    expect(await screen.findByRole("cell", { name: "ben@example.com" })).toBeInTheDocument();
    expect(api.posted).toEqual([
      { email: "ben@example.com", name: "Ben Ode", role: "editor", acl_groups: ["sales", "emea"], password: "short but fine" },
    ]);
    expect(screen.getByRole("status")).toHaveTextContent("Created ben@example.com.");
    expect(within(form).getByLabelText("Email")).toHaveValue("");

    await ui.type(within(form).getByLabelText("Email"), "root@example.com");
    await ui.type(within(form).getByLabelText("Name"), "Again");
    await ui.type(within(form).getByLabelText("Initial password"), "0123456789");
    await ui.click(create);
    expect(await within(form).findByRole("alert")).toHaveTextContent("a user with email root@example.com exists (conflict)");
    expect(within(form).getByLabelText("Email")).toHaveValue("root@example.com"); // kept for correction
    expect(screen.getAllByRole("cell", { name: "root@example.com" })).toHaveLength(1);
  });

  it("changes a role, and restores it when the server refuses", async () => {
    const api = fakeUsersApi([user("u1", "root@example.com", { role: "admin" }), user("u2", "ann@example.com")]);
    const ui = userEvent.setup();
    render(<UsersPanel />);
    await ui.selectOptions(await screen.findByRole("combobox", { name: "Role of ann@example.com" }), "editor");
    await waitFor(() => expect(screen.getByRole("combobox", { name: "Role of ann@example.com" })).toHaveValue("editor"));
    expect(api.patched).toEqual([{ id: "u2", body: { role: "editor" } }]);
    expect(screen.getByRole("status")).toHaveTextContent("ann@example.com is now editor.");

    await ui.selectOptions(screen.getByRole("combobox", { name: "Role of root@example.com" }), "agent");
    expect(await screen.findByRole("alert")).toHaveTextContent("you cannot demote or disable yourself (conflict)");
    await waitFor(() => expect(screen.getByRole("combobox", { name: "Role of root@example.com" })).toHaveValue("admin"));
    expect(api.users[0].role).toBe("admin");
  });

  it("disables and enables a user and resets a password", async () => {
    const api = fakeUsersApi([user("u1", "root@example.com", { role: "admin" }), user("u2", "ann@example.com")]);
    const ui = userEvent.setup();
    render(<UsersPanel />);
    await ui.click(await screen.findByRole("button", { name: "Disable ann@example.com" }));
    const row = screen.getByRole("cell", { name: "ann@example.com" }).closest("tr")!;
    expect(await within(row).findByText("disabled")).toBeInTheDocument();
    await ui.click(within(row).getByRole("button", { name: "Enable ann@example.com" }));
    expect(await within(row).findByText("active")).toBeInTheDocument();

    await ui.click(within(row).getByRole("button", { name: "Reset password for ann@example.com" }));
    const reset = screen.getByRole("form", { name: "Reset password for ann@example.com" });
    expect(within(reset).getByLabelText("New password for ann@example.com")).toHaveFocus();
    await ui.keyboard("a brand new secret");
    await ui.click(within(reset).getByRole("button", { name: "Set password" }));
    expect(await screen.findByText("New password set for ann@example.com.")).toBeInTheDocument();
    expect(screen.queryByRole("form", { name: /Reset password/ })).toBeNull();
    expect(api.patched.map((p) => p.body)).toEqual([
      { disabled: true },
      { disabled: false },
      { password: "a brand new secret" },
    ]);
  });
});

import type { ConversationSummary } from "../api/types";

interface Props {
  conversations: ConversationSummary[];
  activeId: string | null;
  onSelect: (id: string) => void;
  onNew: () => void;
}

export function ConversationList({ conversations, activeId, onSelect, onNew }: Props) {
  return (
    <nav className="conversations" aria-label="Conversations">
      <button type="button" className="primary" onClick={onNew}>
        New conversation
      </button>
      <ul>
        {conversations.map((c) => (
          <li key={c.id}>
            <button
              type="button"
              className="link"
              aria-current={c.id === activeId ? "page" : undefined}
              onClick={() => onSelect(c.id)}
            >
              {c.title || "Untitled"}
            </button>
          </li>
        ))}
      </ul>
      {conversations.length === 0 && <p className="muted">No conversations yet.</p>}
    </nav>
  );
}

import { KeysPanel } from "./KeysPanel";
import { UsagePanel } from "./UsagePanel";

export function AdminPage() {
  return (
    <div className="admin-page">
      <KeysPanel />
      <UsagePanel />
    </div>
  );
}

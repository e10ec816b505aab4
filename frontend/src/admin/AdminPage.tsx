import { AnalyticsPanel } from "./AnalyticsPanel";
import { AuditPanel } from "./AuditPanel";
import { KeysPanel } from "./KeysPanel";
import { UsagePanel } from "./UsagePanel";
import { UsersPanel } from "./UsersPanel";

export function AdminPage() {
  return (
    <div className="admin-page">
      <UsersPanel />
      <KeysPanel />
      <AnalyticsPanel />
      <UsagePanel />
      <AuditPanel />
    </div>
  );
}

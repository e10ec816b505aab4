import type { DocumentDetail, UploadedDocument } from "../api/types";
import { PendingUploadItem } from "./PendingUploadItem";
import type { PendingUpload } from "./progress";
import { UploadItem } from "./UploadItem";

interface Props {
  uploads: UploadedDocument[];
  /** Files still being sent, shown above the accepted ones. */
  pending?: PendingUpload[];
  pollMs?: number;
  onSettled?: (doc: DocumentDetail) => void;
}

export function UploadList({ uploads, pending = [], pollMs = 1000, onSettled }: Props) {
  if (uploads.length === 0 && pending.length === 0) return null;
  return (
    <ul className="upload-list" aria-label="Uploads">
      {pending.map((p) => (
        <PendingUploadItem key={p.key} upload={p} />
      ))}
      {uploads.map((u) => (
        <UploadItem key={u.id} upload={u} pollMs={pollMs} onSettled={onSettled} />
      ))}
    </ul>
  );
}

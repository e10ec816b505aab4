import type { DocumentDetail, UploadedDocument } from "../api/types";
import { UploadItem } from "./UploadItem";

interface Props {
  uploads: UploadedDocument[];
  pollMs?: number;
  onSettled?: (doc: DocumentDetail) => void;
}

export function UploadList({ uploads, pollMs = 1000, onSettled }: Props) {
  if (uploads.length === 0) return null;
  return (
    <ul className="upload-list" aria-label="Uploads">
      {uploads.map((u) => (
        <UploadItem key={u.id} upload={u} pollMs={pollMs} onSettled={onSettled} />
      ))}
    </ul>
  );
}

import { percent, type PendingUpload } from "./progress";

/** A file whose bytes are still going out; its job's stages take over once the server has it. */
export function PendingUploadItem({ upload }: { upload: PendingUpload }) {
  const pct = percent(upload.fraction);
  return (
    <li className="upload-item uploading" aria-label={upload.filename}>
      <div className="upload-head">
        <strong>{upload.filename}</strong>
        <span className="muted">{pct < 100 ? `Uploading ${pct}%` : "Uploaded, waiting for the server…"}</span>
      </div>
      <progress className="byte-progress" max={100} value={pct} aria-label={`Uploading ${upload.filename}`} />
    </li>
  );
}

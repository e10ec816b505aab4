import type { Citation } from "../api/types";

interface Props {
  n: number;
  citation?: Citation;
  title?: string;
  onOpen: (n: number) => void;
}

/** A clickable [n] marker; unsupported citations are flagged. */
export function CitationChip({ n, citation, title, onOpen }: Props) {
  const unsupported = citation !== undefined && !citation.supported;
  const label = `Citation ${n}${title ? `: ${title}` : ""}${unsupported ? " (not supported by the passage)" : ""}`;
  return (
    <button
      type="button"
      className={`chip${unsupported ? " chip-unsupported" : ""}`}
      aria-label={label}
      title={label}
      onClick={() => onOpen(n)}
    >
      [{n}]
    </button>
  );
}

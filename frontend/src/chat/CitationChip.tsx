interface Props {
  n: number;
  title?: string;
  /** True when some sentence citing [n] is not supported by the passage. */
  unsupported?: boolean;
  onOpen: (n: number) => void;
}

/** A clickable [n] marker; citations with unsupported claims are flagged. */
export function CitationChip({ n, title, unsupported = false, onOpen }: Props) {
  const label = `Citation ${n}${title ? `: ${title}` : ""}${unsupported ? " (not fully supported by the passage)" : ""}`;
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

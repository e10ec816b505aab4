/** A timestamp (ISO string, or epoch seconds) for display; "never" when absent. */
export function formatTime(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === "") return "never";
  const d = typeof value === "number" ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

/** A duration in milliseconds: "28 ms", "1.3 s". */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

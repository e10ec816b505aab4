import type { ReactNode } from "react";

interface Props {
  /** Names the table (and its scroll region) for assistive technology. */
  label: string;
  /** Column headers; use <span className="visually-hidden"> for a header that should not show. */
  columns: ReactNode[];
  className?: string;
  children: ReactNode;
}

/**
 * A data table inside its own horizontal scroll container, so a wide table scrolls by itself and never widens the
 * page. The container is focusable so keyboard users can scroll it too.
 */
export function Table({ label, columns, className, children }: Props) {
  return (
    <div className="table-scroll" role="region" aria-label={label} tabIndex={0}>
      <table className={className} aria-label={label}>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={i} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

const SLOT = 10; // viewBox units per day
const BAR = 7;
const HEIGHT = 100;
const EMPTY = 2; // the grey mark on a day without usage

const numbers = new Intl.NumberFormat("en");

/** "1,234". */
export const formatCount = (value: number) => numbers.format(value);

/** "12 requests", "1 token". */
export function countOf(value: number, unit: string): string {
  return `${formatCount(value)} ${unit}${value === 1 ? "" : "s"}`;
}

interface Props {
  /** One point per day, oldest first; days without usage have value 0 and are drawn as an empty slot. */
  series: { day: string; value: number }[];
  /** Singular unit for the bar titles: "request", "token". */
  unit: string;
  /** The chart's accessible name, which should summarise it. */
  label: string;
}

/**
 * A bar per day in plain SVG. The SVG stretches to the width it is given (it never sets a minimum), so it cannot make
 * the page scroll sideways. Every day keeps its slot (a day without usage shows a low grey mark, not a bar); each has
 * a <title> with its date and value.
 */
export function UsageChart({ series, unit, label }: Props) {
  const max = Math.max(0, ...series.map((p) => p.value));
  return (
    <figure className="usage-chart">
      <svg
        role="img"
        aria-label={label}
        viewBox={`0 0 ${series.length * SLOT} ${HEIGHT}`}
        preserveAspectRatio="none"
        focusable="false"
      >
        {series.map((p, i) => {
          const h = max > 0 && p.value > 0 ? Math.max(1, (p.value / max) * HEIGHT) : 0;
          return (
            <g key={p.day} className="usage-day" data-day={p.day} data-value={p.value}>
              <title>{`${p.day}: ${countOf(p.value, unit)}`}</title>
              <rect className="usage-slot" x={i * SLOT} y={0} width={SLOT} height={HEIGHT} />
              {h > 0 ? (
                <rect className="usage-bar" x={i * SLOT + (SLOT - BAR) / 2} y={HEIGHT - h} width={BAR} height={h} />
              ) : (
                <rect
                  className="usage-empty"
                  x={i * SLOT + (SLOT - BAR) / 2}
                  y={HEIGHT - EMPTY}
                  width={BAR}
                  height={EMPTY}
                />
              )}
            </g>
          );
        })}
      </svg>
      {series.length > 0 && (
        <figcaption className="usage-axis muted">
          <span>{series[0].day}</span>
          <span>peak {countOf(max, unit)}</span>
          <span>{series[series.length - 1].day}</span>
        </figcaption>
      )}
    </figure>
  );
}

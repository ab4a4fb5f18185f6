/** Median of a non-empty list of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A figure rendered with a sensible number of significant digits. */
export function formatFigure(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return "—";
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en");
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 0.01 || abs === 0) return value.toFixed(2);
  return value.toPrecision(2);
}

/** The lowest, median and highest of one figure over the rounds. */
export interface Spread {
  min: number;
  median: number;
  max: number;
}

/** The {@link Spread} of a non-empty list of numbers (NaN throughout when any is NaN). */
export function spread(values: number[]): Spread {
  if (values.some(Number.isNaN)) return { min: Number.NaN, median: Number.NaN, max: Number.NaN };
  return { min: Math.min(...values), median: median(values), max: Math.max(...values) };
}

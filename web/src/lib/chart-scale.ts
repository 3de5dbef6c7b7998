// The arithmetic behind the dashboard's small SVG charts: axis maxima that
// read well, ticks, positions, and the paths of a line or an area.

/** The smallest "nice" number (1, 2, 2.5 or 5 times a power of ten) >= v; 1 for nothing. */
export function niceMax(v: number): number {
  if (!Number.isFinite(v) || v <= 0) return 1;
  const exp = Math.floor(Math.log10(v));
  const base = 10 ** exp;
  for (const m of [1, 2, 2.5, 5, 10]) {
    const candidate = m * base;
    // Tolerate float noise: 0.30000000000000004 is 0.3.
    if (candidate >= v * (1 - 1e-12)) return candidate;
  }
  return 10 * base;
}

/** `count + 1` evenly spaced ticks from 0 to `max`, both included. */
export function ticks(max: number, count = 4): number[] {
  if (!(max > 0) || count < 1) return [0];
  const step = max / count;
  return Array.from({ length: count + 1 }, (_, i) => i * step);
}

/** `v` on a scale from 0..max to 0..length, clamped to the range. */
export function scale(v: number, max: number, length: number): number {
  if (!(max > 0) || !Number.isFinite(v)) return 0;
  return Math.max(0, Math.min(length, (v / max) * length));
}

export type Point = readonly [number, number];

/**
 * Points of a series drawn left to right over `width`, value 0 at the
 * bottom (`height`) and `max` at the top. One value sits in the middle.
 */
export function linePoints(values: readonly number[], width: number, height: number, max: number): Point[] {
  const n = values.length;
  return values.map((v, i) => {
    const x = n === 1 ? width / 2 : (i / (n - 1)) * width;
    const y = height - scale(v, max, height);
    return [round(x), round(y)] as const;
  });
}

/** An SVG path through the points; empty for none. */
export function linePath(points: readonly Point[]): string {
  return points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${x},${y}`).join("");
}

/** The area under the points down to `baseline`, closed; empty for none. */
export function areaPath(points: readonly Point[], baseline: number): string {
  const first = points[0];
  const last = points[points.length - 1];
  if (!first || !last) return "";
  return `${linePath(points)}L${last[0]},${baseline}L${first[0]},${baseline}Z`;
}

export interface Segment {
  key: string;
  start: number;
  length: number;
}

/**
 * Stacks non-negative parts one after the other on a scale of 0..max to
 * 0..length (negative or missing parts count as zero).
 */
export function stack(parts: readonly { key: string; value: number }[], max: number, length: number): Segment[] {
  let at = 0;
  return parts.map((p) => {
    const v = Number.isFinite(p.value) && p.value > 0 ? p.value : 0;
    const start = scale(at, max, length);
    at += v;
    const end = scale(at, max, length);
    return { key: p.key, start: round(start), length: round(end - start) };
  });
}

/** Short money for axes and bar ends: $950, $12.3k, $3.36M. */
export function compactMoney(v: number): string {
  if (!Number.isFinite(v)) return "–";
  const a = Math.abs(v);
  const sign = v < 0 ? "-" : "";
  if (a >= 1e9) return `${sign}$${trim(a / 1e9)}B`;
  if (a >= 1e6) return `${sign}$${trim(a / 1e6)}M`;
  if (a >= 1e3) return `${sign}$${trim(a / 1e3)}k`;
  return `${sign}$${Math.round(a)}`;
}

function trim(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1).replace(/\.0$/, "") : v.toFixed(2).replace(/\.?0+$/, "");
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

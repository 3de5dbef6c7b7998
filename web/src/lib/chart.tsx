// Small SVG charts: horizontal (stacked) bars, and lines over an area.
// Each chart is one `role="img"` with a summarising label; its figures are
// also in a data table the reader can open under it (`ChartData`), which is
// where keyboard and screen-reader users find the links a bar click offers.
import type { ComponentChildren, RefObject } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { areaPath, compactMoney, linePath, linePoints, niceMax, stack, ticks } from "./chart-scale";

export interface Series {
  key: string;
  name: string;
  /** CSS class giving the series its colour (`chart-s-cost`, ...). */
  cls: string;
  /** Left out of the legend (the offset of a waterfall bar). */
  hidden?: boolean;
}

export interface BarRow {
  key: string;
  label: string;
  /** Parts stacked left to right, keyed by series. */
  parts: { key: string; value: number }[];
  /** Text at the bar's end. */
  end: string;
  /** Tooltip of the row. */
  title?: string;
  onClick?: () => void;
  /** Drawn muted (the rest beyond the top groups). */
  muted?: boolean;
}

/** The width of an element in CSS pixels, kept up to date; `initial` until measured. */
function useWidth(ref: RefObject<HTMLElement>, initial: number): number {
  const [w, setW] = useState(initial);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      const v = Math.round(el.getBoundingClientRect().width);
      if (v > 0) setW(v);
    };
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref]);
  return w;
}

const LABEL_W = 150;
const END_W = 92;
const ROW_H = 24;
const BAR_H = 15;

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

/** Horizontal bars, one row per group, parts stacked by series. */
export function BarChart(props: {
  label: string;
  series: readonly Series[];
  rows: readonly BarRow[];
  /** The scale's maximum; the largest row total when absent. */
  max?: number;
  testId?: string;
}) {
  const ref = useRef<HTMLElement>(null);
  const W = Math.max(280, useWidth(ref, 640));
  const barW = W - LABEL_W - END_W;
  // The summed rest beyond the top groups gets no bar: it would dwarf them.
  const totals = props.rows.filter((r) => !r.muted).map((r) => r.parts.reduce((s, p) => s + (p.value > 0 ? p.value : 0), 0));
  const max = props.max ?? niceMax(Math.max(0, ...totals));
  const height = Math.max(1, props.rows.length) * ROW_H + 4;
  const cls = new Map(props.series.map((s) => [s.key, s.cls]));
  return (
    <figure class="chart" ref={ref}>
      <svg role="img" aria-label={props.label} viewBox={`0 0 ${W} ${height}`} width={W} height={height} class="chart-svg" data-testid={props.testId}>
        {props.rows.map((r, i) => {
          const y = i * ROW_H + 2;
          const segs = r.muted ? [] : stack(r.parts, max, barW);
          return (
            <g
              key={r.key}
              class={`chart-row${r.onClick ? " clickable" : ""}${r.muted ? " muted" : ""}`}
              data-key={r.key}
              onClick={r.onClick}
            >
              <title>{r.title ?? `${r.label}: ${r.end}`}</title>
              <rect class="chart-hit" x={0} y={y} width={W} height={ROW_H} />
              <text x={LABEL_W - 8} y={y + ROW_H / 2} class="chart-label" text-anchor="end" dominant-baseline="middle">
                {clip(r.label, 22)}
              </text>
              {segs.map((s, j) =>
                (r.parts[j]?.value ?? 0) > 0 ? (
                  <rect
                    key={s.key}
                    class={`chart-bar ${cls.get(s.key) ?? ""}`}
                    data-series={s.key}
                    x={LABEL_W + s.start}
                    y={y + (ROW_H - BAR_H) / 2}
                    width={Math.max(s.length, 0.5)}
                    height={BAR_H}
                    rx={2}
                  />
                ) : null,
              )}
              <text x={W - END_W + 6} y={y + ROW_H / 2} class="chart-value" dominant-baseline="middle">
                {r.end}
              </text>
            </g>
          );
        })}
      </svg>
      <Legend series={props.series} />
    </figure>
  );
}

export function Legend({ series }: { series: readonly Series[] }) {
  const shown = series.filter((s) => !s.hidden);
  if (shown.length < 2) return null;
  return (
    <figcaption class="chart-legend" aria-hidden="true">
      {shown.map((s) => (
        <span key={s.key}>
          <span class={`chart-swatch ${s.cls}`} />
          {s.name}
        </span>
      ))}
    </figcaption>
  );
}

export interface LineSeries extends Series {
  values: number[];
  /** Filled down to the axis. */
  area?: boolean;
}

const LH = 200;
const PAD_L = 56;
const PAD_R = 12;
const PAD_T = 10;
const PAD_B = 24;

/** Lines (or areas) of money over points in time, left to right. */
export function LineChart(props: {
  label: string;
  series: readonly LineSeries[];
  /** One label per point; the first and the last are drawn under the axis. */
  xLabels: readonly string[];
  format?: (v: number) => string;
  testId?: string;
}) {
  const format = props.format ?? compactMoney;
  const ref = useRef<HTMLElement>(null);
  const LW = Math.max(280, useWidth(ref, 640));
  const innerW = LW - PAD_L - PAD_R;
  const innerH = LH - PAD_T - PAD_B;
  const max = niceMax(Math.max(0, ...props.series.flatMap((s) => s.values)));
  const first = props.xLabels[0] ?? "";
  const last = props.xLabels[props.xLabels.length - 1] ?? "";
  return (
    <figure class="chart" ref={ref}>
      <svg role="img" aria-label={props.label} viewBox={`0 0 ${LW} ${LH}`} width={LW} height={LH} class="chart-svg" data-testid={props.testId}>
        {ticks(max, 4).map((t) => {
          const y = PAD_T + innerH - (t / max) * innerH;
          return (
            <g key={t}>
              <line class="chart-grid" x1={PAD_L} x2={LW - PAD_R} y1={y} y2={y} />
              <text class="chart-axis" x={PAD_L - 6} y={y} text-anchor="end" dominant-baseline="middle">
                {format(t)}
              </text>
            </g>
          );
        })}
        <g transform={`translate(${PAD_L},${PAD_T})`}>
          {props.series.map((s) => {
            const pts = linePoints(s.values, innerW, innerH, max);
            return (
              <g key={s.key} class={s.cls} data-series={s.key}>
                {s.area ? <path class="chart-area" d={areaPath(pts, innerH)} /> : null}
                <path class="chart-line" d={linePath(pts)} />
                {pts.length <= 60
                  ? pts.map(([x, y], i) => (
                      <circle key={i} class="chart-dot" cx={x} cy={y} r={2.5}>
                        <title>{`${s.name}, ${props.xLabels[i] ?? ""}: ${format(s.values[i] ?? 0)}`}</title>
                      </circle>
                    ))
                  : null}
              </g>
            );
          })}
        </g>
        <text class="chart-axis" x={PAD_L} y={LH - 6}>
          {first}
        </text>
        {props.xLabels.length > 1 ? (
          <text class="chart-axis" x={LW - PAD_R} y={LH - 6} text-anchor="end">
            {last}
          </text>
        ) : null}
      </svg>
      <Legend series={props.series} />
    </figure>
  );
}

/** The figures behind a chart, in a table the reader can open. */
export function ChartData({ children, label = "Data table" }: { children: ComponentChildren; label?: string }) {
  return (
    <details class="chart-data">
      <summary>{label}</summary>
      {children}
    </details>
  );
}

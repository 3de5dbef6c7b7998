// The anomalies view's own logic: CSV columns, how a change reads, and a
// debounced value for typed filters.
import { useEffect, useState } from "preact/hooks";
import type { Schemas } from "../api/types";
import type { Column } from "./csv";

export type AnomalyPage = Schemas["Anomalies"];
export type NodeAnomaly = Schemas["NodeAnomaly"];
export type TypeAnomaly = Schemas["TypeAnomaly"];
export type TypeHistory = Schemas["TypeHistory"];

/** A change in percent, signed; "new" when there was nothing before. */
export function pct(v: number | null): string {
  if (v === null) return "new";
  return `${v > 0 ? "+" : ""}${v.toFixed(1)}%`;
}

/** A signed dollar change. */
export function signedMoney(v: number, money: (n: number) => string): string {
  return v > 0 ? `+${money(v)}` : v < 0 ? `−${money(-v)}` : money(0);
}

export const NODE_CSV: readonly Column<NodeAnomaly>[] = [
  { header: "crn", value: (n) => n.crn },
  { header: "type", value: (n) => n.type },
  { header: "provider", value: (n) => n.provider },
  { header: "kind", value: (n) => n.kind },
  { header: "previous_usd_mo", value: (n) => n.previous },
  { header: "current_usd_mo", value: (n) => n.current },
  { header: "change_usd_mo", value: (n) => n.change },
  { header: "change_pct", value: (n) => n.change_pct },
  { header: "z", value: (n) => n.z },
  { header: "scan_seq", value: (n) => n.scan_seq },
];

export const TYPE_CSV: readonly Column<TypeAnomaly>[] = [
  { header: "type", value: (t) => t.type },
  { header: "provider", value: (t) => t.provider },
  { header: "count", value: (t) => t.count },
  { header: "previous_count", value: (t) => t.previous_count },
  { header: "previous_usd_mo", value: (t) => t.previous },
  { header: "current_usd_mo", value: (t) => t.current },
  { header: "change_usd_mo", value: (t) => t.change },
  { header: "change_pct", value: (t) => t.change_pct },
  { header: "z", value: (t) => t.z },
  { header: "history_changes", value: (t) => t.history_changes },
];

export const HISTORY_CSV: readonly Column<TypeHistory>[] = [
  { header: "type", value: (h) => h.type },
  { header: "provider", value: (h) => h.provider },
  { header: "count", value: (h) => h.count },
  { header: "cost_usd_mo", value: (h) => h.cost_usd_mo },
  { header: "previous_cost_usd_mo", value: (h) => h.previous_cost_usd_mo },
  { header: "change_usd_mo", value: (h) => h.change_usd_mo },
  { header: "min_cost_usd_mo", value: (h) => h.min_cost_usd_mo },
  { header: "mean_cost_usd_mo", value: (h) => h.mean_cost_usd_mo },
  { header: "max_cost_usd_mo", value: (h) => h.max_cost_usd_mo },
  { header: "waste_usd_mo", value: (h) => h.waste_usd_mo },
  { header: "scans", value: (h) => h.scans },
];

/** Points of a small line chart of `values` in a `w` by `h` box. */
export function sparkPoints(values: readonly number[], w: number, h: number): string {
  if (values.length === 0) return "";
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min || 1;
  const step = values.length > 1 ? w / (values.length - 1) : 0;
  return values.map((v, i) => `${(i * step).toFixed(1)},${(h - ((v - min) / span) * h).toFixed(1)}`).join(" ");
}

/** `value`, once it has stayed the same for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

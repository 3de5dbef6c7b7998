// The Terraform view's own logic: the drift report's totals as figures to
// show, and an attribute's drift as one line.
import type { Schemas } from "../api/types";
import { valueText } from "./node";

export type DriftReport = Schemas["DriftReport"];
export type AttributeDrift = Schemas["AttributeDrift"];

/** The figures shown above the lists, in order, with their labels. */
export function totalFigures(t: DriftReport["totals"]): { key: string; label: string; value: number }[] {
  return [
    { key: "declared", label: "Declared", value: t.declared },
    { key: "in_sync", label: "In sync", value: t.in_sync },
    { key: "changed", label: "Changed", value: t.changed },
    { key: "gone", label: "Gone", value: t.gone },
    { key: "unmanaged", label: "Unmanaged", value: t.unmanaged },
    { key: "outside_scans", label: "Outside the scans", value: t.outside_scans },
    { key: "unmapped", label: "Types not mapped", value: t.unmapped },
  ];
}

/** `size: 100 → 200`; an absent value reads as `(none)`. */
export function attributeLine(a: AttributeDrift): string {
  const side = (v: unknown) => (v === null || v === undefined ? "(none)" : valueText(v));
  return `${a.attribute}: ${side(a.declared)} → ${side(a.live)}`;
}

/** Whether a list was cut: its total is more than it shows. */
export function cutNote(shown: number, total: number): string {
  return total > shown ? `the ${shown.toLocaleString("en-US")} first of ${total.toLocaleString("en-US")}` : "";
}

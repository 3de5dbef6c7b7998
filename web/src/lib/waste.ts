// The waste ledger's own logic: its rows, their CSV columns, and the
// filters, kept out of the view so that they can be tested.
import type { Schemas } from "../api/types";
import type { Column } from "./csv";
import { href } from "../router";

export type Ledger = Schemas["WasteLedger"];
export type LedgerType = Schemas["WasteLedgerType"];
export type Resource = Schemas["WasteResource"];

/** A top resource with the type line it belongs to. */
export interface TopRow extends Resource {
  type: string;
  provider: string;
}

/** Every type's top resources in one list, largest saving first. */
export function topRows(types: readonly LedgerType[]): TopRow[] {
  const rows: TopRow[] = [];
  for (const t of types) for (const r of t.top) rows.push({ ...r, type: t.type, provider: t.provider });
  return rows.sort((a, b) => b.projected_savings_usd_mo - a.projected_savings_usd_mo || (a.crn < b.crn ? -1 : a.crn > b.crn ? 1 : 0));
}

/** Types whose name holds `text` (case-insensitive); all for an empty text. */
export function filterTypes(types: readonly LedgerType[], text: string): LedgerType[] {
  const t = text.trim().toLowerCase();
  return t ? types.filter((x) => x.type.toLowerCase().includes(t)) : types.slice();
}

export type Verdict = "all" | "waste" | "optimize";

export function filterTop(rows: readonly TopRow[], verdict: Verdict): TopRow[] {
  if (verdict === "all") return rows.slice();
  return rows.filter((r) => r.is_waste === (verdict === "waste"));
}

/** The Explorer, filtered to one resource type. */
export function explorerOfType(type: string): string {
  return href("explorer", [], { type });
}

export const TYPE_CSV: readonly Column<LedgerType>[] = [
  { header: "type", value: (t) => t.type },
  { header: "provider", value: (t) => t.provider },
  { header: "resources", value: (t) => t.count },
  { header: "waste_count", value: (t) => t.waste_count },
  { header: "optimize_count", value: (t) => t.optimize_count },
  { header: "waste_usd_mo", value: (t) => t.waste_usd_mo },
  { header: "projected_savings_usd_mo", value: (t) => t.projected_savings_usd_mo },
];

export const TOP_CSV: readonly Column<TopRow>[] = [
  { header: "crn", value: (r) => r.crn },
  { header: "type", value: (r) => r.type },
  { header: "provider", value: (r) => r.provider },
  { header: "verdict", value: (r) => (r.is_waste ? "waste" : "optimize") },
  { header: "projected_savings_usd_mo", value: (r) => r.projected_savings_usd_mo },
  { header: "risk_score", value: (r) => r.risk_score },
  { header: "rule", value: (r) => r.rule },
  { header: "source", value: (r) => r.source },
  { header: "reason", value: (r) => r.reason },
  { header: "suggested_action", value: (r) => r.suggested_action },
];

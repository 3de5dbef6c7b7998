// What the Overview reads and how it shapes it: the cost breakdown by
// provider, account, region and type; the trend over past scans (from the
// SCAN_COMPLETED events of the ledger); the last scan's phase timings.
import { get, request } from "../api/client";
import type { Schemas } from "../api/types";
import { href } from "../router";

/** One group of `GET /api/v1/graph/breakdown`. */
export type BreakdownGroup = Schemas["BreakdownGroup"];
/** The groups beyond `limit`, summed. */
export type BreakdownRest = Schemas["BreakdownRest"];
/** The answer of `GET /api/v1/graph/breakdown` (groups by cost, largest first). */
export type Breakdown = Schemas["Breakdown"];

export type Dimension = "provider" | "account" | "region" | "type";
export const DIMENSIONS: readonly Dimension[] = ["provider", "account", "region", "type"];

export async function fetchBreakdown(by: Dimension, limit: number, signal?: AbortSignal): Promise<Breakdown> {
  return get("/api/v1/graph/breakdown", { query: { by, limit }, signal });
}

/** What the breakdown charts measure. */
export type Metric = "cost" | "waste" | "savings";

export const METRIC_NAMES: Record<Metric, string> = {
  cost: "Monthly cost",
  waste: "Waste",
  savings: "Projected savings",
};

export function metricOf(g: BreakdownGroup | BreakdownRest, m: Metric): number {
  return m === "cost" ? g.cost_usd_mo : m === "waste" ? g.waste_usd_mo : g.projected_savings_usd_mo;
}

/** The Explorer filtered to a group, where the Explorer has that filter. */
export function explorerHref(by: Dimension, key: string): string | null {
  if (by === "provider") return href("explorer", [], { provider: key });
  if (by === "type") return href("explorer", [], { type: key });
  return null;
}

export interface BreakdownRow {
  key: string;
  label: string;
  value: number;
  /** Stacked parts: for cost, its waste then the rest of it. */
  parts: { key: string; value: number }[];
  href: string | null;
  rest: boolean;
}

/**
 * Rows of a breakdown chart for one metric, largest first, with the groups
 * beyond the limit as one last row. Cost stacks its waste first.
 */
export function breakdownRows(b: Breakdown, m: Metric): BreakdownRow[] {
  const by = b.by as Dimension;
  const partsOf = (g: BreakdownGroup | BreakdownRest) =>
    m === "cost"
      ? [
          { key: "waste", value: g.waste_usd_mo },
          { key: "rest", value: Math.max(0, g.cost_usd_mo - g.waste_usd_mo) },
        ]
      : [{ key: m, value: metricOf(g, m) }];
  const rows: BreakdownRow[] = b.groups
    .map((g, i) => ({ g, i }))
    .sort((x, y) => metricOf(y.g, m) - metricOf(x.g, m) || x.i - y.i)
    .map(({ g }) => ({
      key: g.key,
      label: g.key === "" ? "(none)" : g.key,
      value: metricOf(g, m),
      parts: partsOf(g),
      href: g.key === "" ? null : explorerHref(by, g.key),
      rest: false,
    }));
  if (b.rest && b.rest.groups > 0) {
    rows.push({
      key: "\u0000rest",
      label: `${b.rest.groups} more`,
      value: metricOf(b.rest, m),
      parts: partsOf(b.rest),
      href: null,
      rest: true,
    });
  }
  return rows;
}

/** Sums of a breakdown over all its groups (the rest included). */
export function breakdownTotals(b: Breakdown): Omit<BreakdownRest, "groups"> {
  const all: (BreakdownGroup | BreakdownRest)[] = b.rest ? [...b.groups, b.rest] : b.groups;
  const sum = (f: (g: BreakdownGroup | BreakdownRest) => number) => all.reduce((s, g) => s + f(g), 0);
  return {
    nodes: sum((g) => g.nodes),
    cost_usd_mo: sum((g) => g.cost_usd_mo),
    waste_nodes: sum((g) => g.waste_nodes),
    waste_usd_mo: sum((g) => g.waste_usd_mo),
    projected_savings_usd_mo: sum((g) => g.projected_savings_usd_mo),
  };
}

type HistoryEvent = Schemas["HistoryEvent"];

/** One past scan, from its SCAN_COMPLETED event. */
export interface ScanPoint {
  eventSeq: number;
  scanSeq: number;
  /** When the event was recorded, Unix seconds. */
  at: number;
  cost: number;
  waste: number;
  savings: number;
  nodes: number;
  wasteNodes: number;
  durationMs: number;
  payload: Record<string, unknown>;
}

function numberAt(o: Record<string, unknown>, k: string): number | null {
  const v = o[k];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/**
 * The scans of a page of SCAN_COMPLETED events, oldest first; events whose
 * payload lacks the figures are left out.
 */
export function scanPoints(events: readonly HistoryEvent[]): ScanPoint[] {
  const out: ScanPoint[] = [];
  for (const e of events) {
    if (e.type !== "SCAN_COMPLETED") continue;
    const p = e.meta;
    const cost = numberAt(p, "cost_usd_mo");
    const waste = numberAt(p, "waste_usd_mo");
    if (cost === null || waste === null) continue;
    const at = Date.parse(e.ts);
    out.push({
      eventSeq: e.seq,
      scanSeq: numberAt(p, "scan_seq") ?? 0,
      at: Number.isFinite(at) ? at / 1000 : 0,
      cost,
      waste,
      savings: numberAt(p, "projected_savings_usd_mo") ?? 0,
      nodes: numberAt(p, "node_count") ?? 0,
      wasteNodes: numberAt(p, "waste_count") ?? 0,
      durationMs: numberAt(p, "duration_ms") ?? 0,
      payload: p,
    });
  }
  return out.sort((a, b) => a.eventSeq - b.eventSeq);
}

/** The scan pipeline's phases in the order SPEC gives them (and runs them). */
export const PHASE_ORDER: readonly string[] = [
  "engine.init",
  "engine.time_travel",
  "engine.plugin_scan",
  "engine.heuristics",
  "engine.pattern",
  "engine.ghost_linker",
  "engine.formal_verify",
  "engine.sau",
  "engine.policy",
  "engine.signal_analysis",
];

export interface Phase {
  name: string;
  /** The name without its `engine.` prefix. */
  label: string;
  durationMs: number;
}

export interface PhaseTimings {
  phases: Phase[];
  commitMs: number | null;
}

/**
 * The phase timings of a scan report, in SPEC order (unknown names after,
 * as given); null when the report has none (scans recorded before the
 * timings were).
 */
export function phasesOf(payload: Record<string, unknown>): PhaseTimings | null {
  const raw = payload["phases"];
  if (!Array.isArray(raw)) return null;
  const phases: Phase[] = [];
  for (const p of raw as unknown[]) {
    if (typeof p !== "object" || p === null) continue;
    const o = p as Record<string, unknown>;
    const d = numberAt(o, "duration_ms");
    if (typeof o.name !== "string" || d === null) continue;
    phases.push({ name: o.name, label: o.name.replace(/^engine\./, ""), durationMs: Math.max(0, d) });
  }
  if (phases.length === 0) return null;
  const rank = (n: string) => {
    const i = PHASE_ORDER.indexOf(n);
    return i < 0 ? PHASE_ORDER.length : i;
  };
  const ordered = phases.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p.name) - rank(b.p.name) || a.i - b.i).map((x) => x.p);
  return { phases: ordered, commitMs: numberAt(payload, "commit_ms") };
}

/** The started scan of `POST /api/v1/engine/scan` (202). */
export type ScanStarted = Schemas["ScanStarted"];

/** Starts a scan of every source, in the background. 409 while one runs. */
export async function startScan(): Promise<ScanStarted> {
  const res = await request("POST", "/api/v1/engine/scan", { body: {} });
  return (await res.json()) as ScanStarted;
}

/** The scan sequence an event of the live stream completed, or null. */
export function completedScanSeq(e: { event_type: string; payload: Record<string, unknown> }): number | null {
  if (e.event_type !== "SCAN_COMPLETED") return null;
  return numberAt(e.payload, "scan_seq") ?? 0;
}

import { describe, expect, it } from "vitest";
import type { Schemas } from "../api/types";
import { type Breakdown, breakdownRows, breakdownTotals, completedScanSeq, explorerHref, PHASE_ORDER, phasesOf, scanPoints } from "./overview-data";

const breakdown: Breakdown = {
  by: "provider",
  total_groups: 3,
  groups: [
    { key: "aws", nodes: 10, cost_usd_mo: 1000, waste_nodes: 2, waste_usd_mo: 100, projected_savings_usd_mo: 90 },
    { key: "gcp", nodes: 5, cost_usd_mo: 500, waste_nodes: 3, waste_usd_mo: 300, projected_savings_usd_mo: 250 },
  ],
  rest: { groups: 1, nodes: 1, cost_usd_mo: 20, waste_nodes: 1, waste_usd_mo: 20, projected_savings_usd_mo: 20 },
};

describe("breakdownRows", () => {
  it("stacks a group's waste before the rest of its cost, and keeps the API's order for cost", () => {
    const rows = breakdownRows(breakdown, "cost");
    expect(rows.map((r) => r.key)).toEqual(["aws", "gcp", "\u0000rest"]);
    expect(rows[0]?.parts).toEqual([
      { key: "waste", value: 100 },
      { key: "rest", value: 900 },
    ]);
    expect(rows[0]?.href).toBe("#/explorer?provider=aws");
    expect(rows[2]).toMatchObject({ label: "1 more", value: 20, href: null, rest: true });
  });
  it("orders by the metric shown, the rest last", () => {
    expect(breakdownRows(breakdown, "waste").map((r) => [r.key, r.value])).toEqual([
      ["gcp", 300],
      ["aws", 100],
      ["\u0000rest", 20],
    ]);
    expect(breakdownRows(breakdown, "savings")[0]?.parts).toEqual([{ key: "savings", value: 250 }]);
  });
  it("links types to the Explorer, and neither accounts nor regions (it has no such filter)", () => {
    expect(breakdownRows({ ...breakdown, by: "type", rest: null }, "cost")[0]?.href).toBe("#/explorer?type=aws");
    expect(breakdownRows({ ...breakdown, by: "region", rest: null }, "cost")[0]?.href).toBeNull();
    expect(explorerHref("type", "ec2:volume")).toBe("#/explorer?type=ec2%3Avolume");
    expect(explorerHref("account", "123")).toBeNull();
  });
  it("never draws a negative rest of cost", () => {
    const odd: Breakdown = { by: "provider", total_groups: 1, rest: null, groups: [{ key: "x", nodes: 1, cost_usd_mo: 5, waste_nodes: 1, waste_usd_mo: 8, projected_savings_usd_mo: 0 }] };
    expect(breakdownRows(odd, "cost")[0]?.parts[1]).toEqual({ key: "rest", value: 0 });
  });
  it("sums every group, the rest included", () => {
    expect(breakdownTotals(breakdown)).toEqual({ nodes: 16, cost_usd_mo: 1520, waste_nodes: 6, waste_usd_mo: 420, projected_savings_usd_mo: 360 });
  });
});

function event(seq: number, meta: Record<string, unknown>, type = "SCAN_COMPLETED"): Schemas["HistoryEvent"] {
  return { actor: "engine", crn: "", hash: "", id: String(seq), message: "", meta, seq, session_id: "s", status: "OK", ts: "2026-01-01T00:00:00Z", type } as Schemas["HistoryEvent"];
}

describe("scanPoints", () => {
  it("turns newest-first events into points oldest first, leaving out those without figures", () => {
    const pts = scanPoints([
      event(9, { scan_seq: 3, cost_usd_mo: 30, waste_usd_mo: 3, projected_savings_usd_mo: 2, node_count: 300, waste_count: 7, duration_ms: 1200 }),
      event(8, { scan_seq: 2 }),
      event(7, { scan_seq: 2, cost_usd_mo: 20 }, "APPROVAL"),
      event(4, { scan_seq: 1, cost_usd_mo: 10, waste_usd_mo: 1 }),
    ]);
    expect(pts.map((p) => [p.scanSeq, p.cost, p.waste, p.savings])).toEqual([
      [1, 10, 1, 0],
      [3, 30, 3, 2],
    ]);
    expect(pts[1]).toMatchObject({ nodes: 300, wasteNodes: 7, durationMs: 1200, at: 1767225600 });
  });
});

describe("phasesOf", () => {
  it("reads the phases in SPEC order with the commit time", () => {
    const phases = [...PHASE_ORDER].reverse().map((name, i) => ({ name, duration_ms: i * 10 }));
    const t = phasesOf({ phases, commit_ms: 500 });
    expect(t?.phases.map((p) => p.name)).toEqual(PHASE_ORDER);
    expect(t?.phases[0]).toEqual({ name: "engine.init", label: "init", durationMs: 90 });
    expect(t?.commitMs).toBe(500);
  });
  it("is null for a scan recorded before the timings were, and skips malformed entries", () => {
    expect(phasesOf({ cost_usd_mo: 1 })).toBeNull();
    expect(phasesOf({ phases: [] })).toBeNull();
    const t = phasesOf({ phases: [{ name: "engine.init" }, null, { name: "engine.sau", duration_ms: -4 }, { name: "engine.x", duration_ms: 1 }] });
    expect(t?.phases).toEqual([
      { name: "engine.sau", label: "sau", durationMs: 0 },
      { name: "engine.x", label: "x", durationMs: 1 },
    ]);
    expect(t?.commitMs).toBeNull();
  });
});

describe("completedScanSeq", () => {
  it("is the scan of a SCAN_COMPLETED event and null for any other", () => {
    expect(completedScanSeq({ event_type: "SCAN_COMPLETED", payload: { scan_seq: 4 } })).toBe(4);
    expect(completedScanSeq({ event_type: "APPROVAL", payload: { scan_seq: 4 } })).toBeNull();
  });
});

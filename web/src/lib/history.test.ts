import { describe, expect, it } from "vitest";
import {
  canonicalCrn,
  durationSeconds,
  EMPTY_FILTERS,
  filtersFromQuery,
  filtersToQuery,
  fromEnvelope,
  type HistoryEvent,
  type HistoryFilters,
  matches,
  mergeNewest,
  payloadSummary,
  SAU_ACTION_TYPES,
  statusOf,
} from "./history";

const CRN = "crn:svc:aws:eu-west-1:ec2:volume:123456789012:vol-0abc";
const NOW = Date.parse("2026-11-29T12:00:00Z") / 1000;

function ev(over: Partial<HistoryEvent> = {}): HistoryEvent {
  return {
    actor: "api",
    crn: CRN,
    hash: "ab".repeat(32),
    id: "7",
    message: "m",
    meta: {},
    seq: 7,
    session_id: "s",
    status: "OK",
    ts: "2026-11-29T11:59:00Z",
    type: "ISOLATION",
    ...over,
  };
}

function f(over: Partial<HistoryFilters>): HistoryFilters {
  return { ...EMPTY_FILTERS, ...over };
}

describe("matches", () => {
  it("admits everything without filters", () => {
    expect(matches(ev(), EMPTY_FILTERS, NOW)).toBe(true);
  });

  it("compares the type exactly", () => {
    expect(matches(ev(), f({ type: "ISOLATION" }), NOW)).toBe(true);
    expect(matches(ev(), f({ type: "isolation" }), NOW)).toBe(false);
    expect(matches(ev(), f({ type: "POLICY_CHANGE" }), NOW)).toBe(false);
  });

  it("takes s.a.u_ACTION for every s.a.u decision and nothing else", () => {
    for (const t of SAU_ACTION_TYPES) {
      expect(matches(ev({ type: t, status: statusOf(t) }), f({ type: "s.a.u_ACTION" }), NOW)).toBe(true);
    }
    for (const t of ["SCAN_COMPLETED", "POLICY_CHANGE", "ISOLATION", "PIPELINE_MOVE", "LOCK_TIMEOUT"]) {
      expect(matches(ev({ type: t }), f({ type: "s.a.u_ACTION" }), NOW)).toBe(false);
    }
  });

  it("combines s.a.u_ACTION with a status", () => {
    const filters = f({ type: "s.a.u_ACTION", status: "approved" });
    expect(matches(ev({ type: "APPROVAL", status: "APPROVED" }), filters, NOW)).toBe(true);
    expect(matches(ev({ type: "REJECTION", status: "REJECTED" }), filters, NOW)).toBe(false);
  });

  it("compares the CRN, with or without the svc segment", () => {
    expect(matches(ev(), f({ crn: CRN }), NOW)).toBe(true);
    expect(matches(ev(), f({ crn: "crn:aws:eu-west-1:ec2:volume:123456789012:vol-0abc" }), NOW)).toBe(true);
    expect(matches(ev(), f({ crn: CRN + "x" }), NOW)).toBe(false);
    expect(matches(ev({ crn: "" }), f({ crn: CRN }), NOW)).toBe(false);
  });

  it("reads since as a duration before now or as a time", () => {
    expect(matches(ev(), f({ since: "5m" }), NOW)).toBe(true);
    expect(matches(ev(), f({ since: "30s" }), NOW)).toBe(false);
    expect(matches(ev(), f({ since: "1h30m" }), NOW)).toBe(true);
    expect(matches(ev(), f({ since: "2026-11-29T11:59:00Z" }), NOW)).toBe(true);
    expect(matches(ev(), f({ since: "2026-11-29T11:59:01Z" }), NOW)).toBe(false);
    expect(matches(ev(), f({ since: "yesterday" }), NOW)).toBe(false);
  });

  it("takes until as exclusive", () => {
    expect(matches(ev(), f({ until: "2026-11-29T11:59:01Z" }), NOW)).toBe(true);
    expect(matches(ev(), f({ until: "2026-11-29T11:59:00Z" }), NOW)).toBe(false);
  });
});

describe("durations", () => {
  it("reads the API's units, combined", () => {
    expect(durationSeconds("3d")).toBe(3 * 86400);
    expect(durationSeconds("1h30m")).toBe(5400);
    expect(durationSeconds("45s")).toBe(45);
    expect(durationSeconds("3 days")).toBeNull();
    expect(durationSeconds("")).toBeNull();
  });
});

describe("route query", () => {
  it("round-trips and leaves out what is empty", () => {
    const q = filtersToQuery(f({ type: "POLICY_CHANGE", since: " 3d " }));
    expect(q).toEqual({ type: "POLICY_CHANGE", since: "3d" });
    expect(filtersFromQuery(new URLSearchParams(q))).toEqual(f({ type: "POLICY_CHANGE", since: "3d" }));
  });
});

describe("live events", () => {
  it("turn an envelope into a history event with its status", () => {
    const e = fromEnvelope({
      actor: "alice",
      crn: CRN,
      event_type: "QUARANTINE",
      hash: "cd".repeat(32),
      id: "12",
      message: "isolated",
      payload: { action: "ISOLATE" },
      prev_hash: "00".repeat(32),
      seq: 12,
      session_id: "s1",
      timestamp: NOW,
    });
    expect(e).toMatchObject({ seq: 12, type: "QUARANTINE", status: "QUARANTINED", ts: "2026-11-29T12:00:00Z", meta: { action: "ISOLATE" } });
    expect(canonicalCrn(CRN)).toBe(CRN);
  });

  it("merge ahead of the page, newest first, each seq once", () => {
    const merged = mergeNewest([ev({ seq: 12 }), ev({ seq: 10 })], [ev({ seq: 10 }), ev({ seq: 9 })]);
    expect(merged.map((e) => e.seq)).toEqual([12, 10, 9]);
  });
});

describe("payload summaries", () => {
  it("say what a policy change did", () => {
    expect(payloadSummary("POLICY_CHANGE", { rule_id: "r1", action: "ADDED", enforcement_mode: "shadow", author: "api", rule_action: "warn" })).toBe(
      "r1 · ADDED · shadow · action warn · by api",
    );
    expect(payloadSummary("POLICY_CHANGE", { rule_id: "", action: "REORDERED", enforcement_mode: "", author: "cli", order: ["b", "a"] })).toBe(
      "REORDERED: b, a · by cli",
    );
  });

  it("give a scan's figures", () => {
    expect(payloadSummary("SCAN_COMPLETED", { scan_seq: 3, node_count: 99796, waste_count: 1200, waste_usd_mo: 4321.5, duration_ms: 5000 })).toBe(
      "scan 3 · 99,796 nodes · 1,200 waste · $4,322/mo waste · 5,000 ms",
    );
  });

  it("read an isolation's ttl", () => {
    expect(payloadSummary("ISOLATION", { action: "ADDED", reason_code: "migration", ttl_seconds: 0, author_identifier: "bob" })).toBe(
      "ADDED · reason migration · permanent · by bob",
    );
    expect(payloadSummary("ISOLATION", { reason_code: "x", ttl_seconds: 86400 })).toBe("reason x · for 1 d");
  });

  it("fall back to the first scalar fields, skipping objects and long text", () => {
    expect(payloadSummary("SOMETHING_NEW", { a: 1, b: { c: 2 }, d: "x".repeat(100), e: "short", f: true, g: 3, h: 4 })).toBe("a 1 · e short · f true · g 3");
    expect(payloadSummary("SCAN_COMPLETED", {})).toBe("");
  });
});

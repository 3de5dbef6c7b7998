import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { parseDuration } from "./format";
import {
  classifyDiff,
  columnsOf,
  COLUMNS,
  decisionError,
  decisionsFor,
  itemName,
  legalMoves,
  mergeStage,
  parseTtl,
  revertablesOf,
  STAGES,
  type Item,
  type Queue,
} from "./remediation";

function item(crn: string, stage: Item["stage"], over: Partial<Item> = {}): Item {
  return {
    action: "delete",
    blast_radius: 0,
    blockers: [],
    crn,
    failure: null,
    flagged_at: 0,
    held_by: null,
    override: null,
    plan_hash: "h-" + crn,
    proof: null,
    reachability: "unreachable",
    reason: "",
    rejected: null,
    risk_score: 10,
    rule: "r",
    saga_id: null,
    savings_usd_mo: 1,
    stage,
    stage_since: 0,
    state: "running",
    type: "ec2:volume",
    ...over,
  };
}

function queue(counts: Partial<Record<Item["stage"], number>>, stages: Partial<Record<Item["stage"], Item[]>>): Queue {
  const zero = { flagged: 0, analyzed: 0, codegen: 0, sau_gate: 0, pending: 0, applied: 0, rejected: 0 };
  const none = { flagged: [], analyzed: [], codegen: [], sau_gate: [], pending: [], applied: [], rejected: [] };
  return {
    counts: { ...zero, ...counts },
    savings_usd_mo: { ...zero, pending: 12.5 },
    limit: 25,
    stages: { ...none, ...stages },
  };
}

describe("stages and columns", () => {
  it("are in SPEC 3.1's flow order, rejected last", () => {
    expect(STAGES).toEqual(["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied"]);
    expect(COLUMNS[COLUMNS.length - 1]).toBe("rejected");
  });

  it("carry the API's counts and savings, and know when there are more", () => {
    const q = queue({ pending: 3, applied: 1 }, { pending: [item("a", "pending"), item("b", "pending")], applied: [item("c", "applied")] });
    const cols = columnsOf(q);
    expect(cols.map((c) => c.stage)).toEqual([...COLUMNS]);
    const pending = cols.find((c) => c.stage === "pending");
    expect(pending?.count).toBe(3);
    expect(pending?.savings).toBe(12.5);
    expect(pending?.more).toBe(true);
    expect(cols.find((c) => c.stage === "applied")?.more).toBe(false);
  });

  it("merge a stage loaded further with the rest as it was", () => {
    const old = queue({ pending: 3, flagged: 1 }, { pending: [item("a", "pending")], flagged: [item("f", "flagged")] });
    const fresh = queue({ pending: 4, flagged: 1 }, { pending: [item("a", "pending"), item("b", "pending")] });
    const m = mergeStage(old, fresh, "pending");
    expect(m.counts.pending).toBe(4);
    expect(m.stages.pending.map((i) => i.crn)).toEqual(["a", "b"]);
    expect(m.stages.flagged.map((i) => i.crn)).toEqual(["f"]);
  });
});

describe("decisions", () => {
  it("offer only the moves the API allows", () => {
    expect(legalMoves({ stage: "pending", held_by: null })).toEqual(["sau_gate", "flagged"]);
    expect(legalMoves({ stage: "sau_gate", held_by: null })).toEqual(["flagged"]);
    expect(legalMoves({ stage: "sau_gate", held_by: "bob" })).toEqual(["pending", "flagged"]);
    expect(legalMoves({ stage: "applied", held_by: null })).toEqual([]);
    expect(legalMoves({ stage: "flagged", held_by: null })).toEqual([]);
  });

  it("approve only pending items, override only at the gate, nothing without a plan", () => {
    expect(decisionsFor(item("a", "pending"))).toMatchObject({ approve: true, reject: true, override: false, bulk: true });
    expect(decisionsFor(item("a", "sau_gate"))).toMatchObject({ approve: false, override: true });
    expect(decisionsFor(item("a", "applied"))).toMatchObject({ approve: false, reject: false, bulk: false });
    expect(decisionsFor(item("a", "rejected"))).toMatchObject({ reject: false, bulk: false });
    expect(decisionsFor(item("a", "flagged", { plan_hash: "" }))).toEqual({
      approve: false,
      reject: false,
      override: false,
      moves: [],
      bulk: false,
    });
  });

  it("read a 409 as a plan that changed, with the API's words", () => {
    const e = new ApiError(409, "conflict", "the plan of x changed since it was shown: it is now b, not a");
    const d = decisionError(e);
    expect(d.stale).toBe(true);
    expect(d.message).toBe(
      "This plan changed since you opened it (the plan of x changed since it was shown: it is now b, not a). Review the new plan.",
    );
    expect(decisionError(new ApiError(409, "conflict", "x is at sau_gate, not pending")).stale).toBe(true);
  });

  it("show other refusals as they are", () => {
    const illegal = decisionError(new ApiError(409, "conflict", "illegal move of x from pending to applied: not a legal move"));
    expect(illegal).toEqual({ message: "illegal move of x from pending to applied: not a legal move", stale: false });
    expect(decisionError(new ApiError(409, "conflict", "x is blocked by policy p; an override is needed")).stale).toBe(false);
    expect(decisionError(new ApiError(422, "invalid", "an override needs a reason")).message).toBe(
      "an override needs a reason (422 invalid)",
    );
    expect(decisionError(new ApiError(403, "forbidden", "operator role needed")).message).toContain("operator role needed");
  });
});

describe("a Terraform diff", () => {
  it("classifies each line", () => {
    const text =
      '  # aws_instance.x will be destroyed\n  - resource "aws_instance" "x" {\n      - id = "i-1" -> null\n      + tags = {}\n      ~ size = 1 -> 2\n    }\n\nPlan: 0 to add, 0 to change, 1 to destroy.\n';
    expect(classifyDiff(text).map((l) => l.kind)).toEqual([
      "comment",
      "remove",
      "remove",
      "add",
      "change",
      "context",
      "context",
      "summary",
    ]);
    expect(classifyDiff(text)[1]?.text).toBe('  - resource "aws_instance" "x" {');
  });

  it("reads -/+ as a replacement", () => {
    expect(classifyDiff("-/+ resource")[0]?.kind).toBe("change");
  });
});

describe("small parts", () => {
  it("names an item by the end of its id", () => {
    expect(itemName("crn:svc:aws:us-east-1:ec2:volume:1:vol-0abc")).toBe("vol-0abc");
    expect(itemName("crn:svc:aws:ap-southeast-2:dynamodb:table:1:arn:aws:dynamodb:ap-southeast-2:1:table/auth-200-events")).toBe(
      "auth-200-events",
    );
    expect(itemName("not a crn")).toBe("not a crn");
  });

  it("parses an ignore lifetime", () => {
    expect(parseTtl("7d", parseDuration)).toBe(604800);
    expect(parseTtl("permanent", parseDuration)).toBe(0);
    expect(parseTtl("", parseDuration)).toBeNull();
    expect(parseTtl("soon", parseDuration)).toBeNull();
  });

  it("lists each revertable payload once, with its step", () => {
    const ev = (seq: number, type: string, meta: Record<string, unknown>) => ({
      actor: "a",
      crn: "c",
      hash: "",
      id: String(seq),
      message: "m" + seq,
      meta,
      seq,
      session_id: "",
      status: "OK" as const,
      ts: "2026-01-01T00:00:00Z",
      type,
    });
    const r = revertablesOf([
      ev(3, "EXECUTION_COMMIT", { compensating_payload_hash: "h2", step_index: 1 }),
      ev(2, "EXECUTION_COMMIT", { compensating_payload_hash: "h1", step_index: 0 }),
      ev(1, "QUARANTINE", { compensating_payload_hash: "h1" }),
      ev(0, "QUARANTINE", {}),
    ] as never);
    expect(r.map((x) => [x.hash, x.what])).toEqual([
      ["h2", "EXECUTION_COMMIT step 2: m3"],
      ["h1", "EXECUTION_COMMIT step 1: m2"],
    ]);
  });
});

// The remediation board's own logic, kept out of the components so that
// it can be tested: the stages in flow order, the queue as columns, the
// moves the API allows, a Terraform diff's lines, and what a refused
// decision means to the operator.
import { ApiError } from "../api/client";
import type { Schemas } from "../api/types";

export type Item = Schemas["RemediationItem"];
export type Queue = Schemas["RemediationQueue"];
export type Plan = Schemas["RemediationPlan"];
/** A pipeline stage (SPEC 3.1), or `rejected`. */
export type Part = Item["stage"];
export type Stage = Exclude<Part, "rejected">;

/** SPEC 3.1's stages in flow order. */
export const STAGES: readonly Stage[] = ["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied"];

/** The board's columns: the stages in flow order, then the rejected items. */
export const COLUMNS: readonly Part[] = [...STAGES, "rejected"];

const TITLES: Record<Part, string> = {
  flagged: "Flagged",
  analyzed: "Analyzed",
  codegen: "Plan generated",
  sau_gate: "Safety gate",
  pending: "Pending approval",
  applied: "Applied",
  rejected: "Rejected",
};

/** A column's heading; the stage's own name is shown beside it. */
export function stageTitle(p: Part): string {
  return TITLES[p];
}

/** An item's name on its card: the last part of the resource's own id. */
export function itemName(crn: string): string {
  const p = crn.split(":");
  if (p.length < 8 || p[0] !== "crn") return crn;
  const id = p.slice(7).join(":");
  const tail = id.split(/[/:]/).filter((s) => s !== "");
  return tail[tail.length - 1] ?? id;
}

/** Items listed per column at first, and added by each "Show more". */
export const PAGE = 25;
/** The most the queue lists per stage (its `limit` maximum). */
export const MAX_LISTED = 1000;

export interface Column {
  stage: Part;
  title: string;
  count: number;
  savings: number;
  items: Item[];
  /** More items than are listed, and the API can list more. */
  more: boolean;
}

/** The queue as the board's columns, in flow order. */
export function columnsOf(q: Queue): Column[] {
  return COLUMNS.map((stage) => {
    const items = q.stages[stage] ?? [];
    const count = q.counts[stage] ?? 0;
    return {
      stage,
      title: stageTitle(stage),
      count,
      savings: q.savings_usd_mo[stage] ?? 0,
      items,
      more: items.length < count && items.length < MAX_LISTED,
    };
  });
}

/**
 * The queue after loading one stage with a larger `limit`: every count and
 * saving from `fresh` (they cover all stages), that stage's items too, and
 * the other stages' items as they were.
 */
export function mergeStage(old: Queue, fresh: Queue, stage: Part): Queue {
  return {
    ...fresh,
    limit: old.limit,
    stages: { ...old.stages, [stage]: fresh.stages[stage] ?? [] },
  };
}

/** Where a stage `move` may take an item (the API refuses any other move with a 409). */
export function legalMoves(item: Pick<Item, "stage" | "held_by">): Stage[] {
  switch (item.stage) {
    case "pending":
      return ["sau_gate", "flagged"];
    case "sau_gate":
      return item.held_by ? ["pending", "flagged"] : ["flagged"];
    case "analyzed":
    case "codegen":
      return ["flagged"];
    default:
      return [];
  }
}

/** What an operator may do to an item, by its stage. */
export interface Decisions {
  approve: boolean;
  reject: boolean;
  override: boolean;
  moves: Stage[];
  /** It can be picked for a bulk approve or reject. */
  bulk: boolean;
}

export function decisionsFor(item: Pick<Item, "stage" | "held_by" | "plan_hash">): Decisions {
  const planned = item.plan_hash !== "";
  const open = item.stage !== "applied" && item.stage !== "rejected";
  return {
    approve: planned && item.stage === "pending",
    reject: planned && open,
    override: planned && item.stage === "sau_gate",
    moves: planned ? legalMoves(item) : [],
    bulk: planned && open,
  };
}

export type DiffKind = "add" | "remove" | "change" | "comment" | "summary" | "context";

export interface DiffLine {
  kind: DiffKind;
  text: string;
}

/** A Terraform-style plan, line by line, each with what it says. */
export function classifyDiff(text: string): DiffLine[] {
  const lines = text.replace(/\r\n/g, "\n").replace(/\n$/, "").split("\n");
  return lines.map((line) => {
    const t = line.trimStart();
    let kind: DiffKind = "context";
    if (t.startsWith("-/+") || t.startsWith("+/-") || t.startsWith("~")) kind = "change";
    else if (t.startsWith("+")) kind = "add";
    else if (t.startsWith("-")) kind = "remove";
    else if (t.startsWith("#")) kind = "comment";
    else if (/^Plan:/.test(t)) kind = "summary";
    return { kind, text: line };
  });
}

/** The word a screen reader says before a diff line (the colour alone says nothing). */
export function diffLabel(kind: DiffKind): string {
  switch (kind) {
    case "add":
      return "added";
    case "remove":
      return "removed";
    case "change":
      return "changed";
    default:
      return "";
  }
}

/**
 * What to tell the operator when a decision was refused. A 409 on a
 * decision means the item is no longer what the operator was shown (its
 * plan, or its stage); those that say what else is needed are shown as
 * they are.
 */
export function decisionError(e: unknown): { message: string; stale: boolean } {
  if (e instanceof ApiError) {
    if (e.status === 409) {
      const plain = /^illegal move|blocked by policy|writer stopped/i.test(e.message);
      if (!plain) {
        return {
          message: `This plan changed since you opened it (${e.message}). Review the new plan.`,
          stale: true,
        };
      }
      return { message: e.message, stale: false };
    }
    if (e.status === 403) return { message: `Your role may not do this (${e.message}).`, stale: false };
    return { message: `${e.message} (${e.status} ${e.code})`, stale: false };
  }
  return { message: e instanceof Error ? e.message : String(e), stale: false };
}

/** Ledger events after which the board is out of date. */
export const BOARD_EVENTS: ReadonlySet<string> = new Set([
  "APPROVAL",
  "REJECTION",
  "EXECUTION_COMMIT",
  "EXECUTION_ROLLBACK",
  "PIPELINE_MOVE",
  "QUARANTINE",
  "QUARANTINE_REVERTED",
  "SCAN_COMPLETED",
  "ISOLATION",
  "s.a.u_OVERRIDE",
]);

/**
 * Parses an ignore entry's lifetime: a duration (`7d`, `12h`, `30m`, `2w`,
 * or seconds) or `permanent` (0). Null when it says neither.
 */
export function parseTtl(text: string, parse: (t: string) => number | null): number | null {
  const t = text.trim().toLowerCase();
  if (t === "permanent" || t === "forever") return 0;
  if (t === "") return null;
  return parse(t);
}

/** Revertable payloads named by ledger events: the newest first, each hash once. */
export interface Revertable {
  hash: string;
  what: string;
  at: string;
}

export function revertablesOf(events: readonly Schemas["HistoryEvent"][]): Revertable[] {
  const seen = new Set<string>();
  const out: Revertable[] = [];
  for (const e of events) {
    const meta = e.meta as Record<string, unknown> | null;
    const hash = meta && typeof meta["compensating_payload_hash"] === "string" ? meta["compensating_payload_hash"] : "";
    if (!hash || seen.has(hash)) continue;
    seen.add(hash);
    const step = meta && typeof meta["step_index"] === "number" ? ` step ${meta["step_index"] + 1}` : "";
    out.push({ hash, what: `${e.type}${step}: ${e.message}`, at: e.ts });
  }
  return out;
}

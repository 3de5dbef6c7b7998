// The History view's logic, kept out of the component: its filters as a
// route query, whether a live ledger event belongs on the page the filters
// select (the same rules as `GET /api/v1/history`, DESIGN.md section 2),
// the live envelope in the history event's shape, and one-line summaries
// of the payloads whose shape SPEC 6.1 and the ledger declare.
import type { LedgerEvent } from "../api/events";
import type { Schemas } from "../api/types";
import { money, num, rfc3339 } from "./format";

export type HistoryEvent = Schemas["HistoryEvent"];
export type EventStatus = HistoryEvent["status"];

/** The filters of `GET /api/v1/history` the view offers; "" is absent. */
export interface HistoryFilters {
  type: string;
  crn: string;
  status: string;
  since: string;
  until: string;
}

export const FILTER_KEYS = ["type", "crn", "status", "since", "until"] as const;

export const EMPTY_FILTERS: HistoryFilters = { type: "", crn: "", status: "", since: "", until: "" };

/** The type filter that stands for every s.a.u decision. */
export const SAU_ACTION = "s.a.u_ACTION";

/** The types `s.a.u_ACTION` matches (engine/store/src/ledger/events.rs). */
export const SAU_ACTION_TYPES: readonly string[] = [
  "QUARANTINE",
  "QUARANTINE_REVERTED",
  "APPROVAL",
  "REJECTION",
  "EXECUTION_COMMIT",
  "EXECUTION_ROLLBACK",
  "s.a.u_OVERRIDE",
];

/** Every event type the ledger writes, for the type filter's suggestions. */
export const EVENT_TYPES: readonly string[] = [
  "SCAN_COMPLETED",
  "SCAN_RECOVERED",
  "ISOLATION",
  "QUARANTINE",
  "QUARANTINE_REVERTED",
  "APPROVAL",
  "REJECTION",
  "EXECUTION_COMMIT",
  "EXECUTION_ROLLBACK",
  "POLICY_CHANGE",
  "s.a.u_OVERRIDE",
  "LOCK_TIMEOUT",
  "PIPELINE_MOVE",
  "HISTORY_PRUNED",
];

export const STATUSES: readonly EventStatus[] = ["OK", "APPROVED", "REJECTED", "QUARANTINED"];

/** The history status of an event type: APPROVED, REJECTED, QUARANTINED or OK. */
export function statusOf(type: string): EventStatus {
  switch (type) {
    case "APPROVAL":
      return "APPROVED";
    case "REJECTION":
      return "REJECTED";
    case "QUARANTINE":
      return "QUARANTINED";
    default:
      return "OK";
  }
}

export function filtersFromQuery(q: URLSearchParams): HistoryFilters {
  const f = { ...EMPTY_FILTERS };
  for (const k of FILTER_KEYS) f[k] = (q.get(k) ?? "").trim();
  return f;
}

/** The filters as route query entries (absent ones left out by `href`). */
export function filtersToQuery(f: HistoryFilters): Record<string, string> {
  const q: Record<string, string> = {};
  for (const k of FILTER_KEYS) if (f[k].trim() !== "") q[k] = f[k].trim();
  return q;
}

export function sameFilters(a: HistoryFilters, b: HistoryFilters): boolean {
  return FILTER_KEYS.every((k) => a[k].trim() === b[k].trim());
}

/**
 * Seconds in a duration as the API reads `since`: one or more
 * `<n><unit>` with units d, h, m, s (`3d`, `1h30m`); null otherwise.
 */
export function durationSeconds(text: string): number | null {
  const t = text.trim();
  if (!/^(\d+[dhms])+$/.test(t)) return null;
  let total = 0;
  for (const m of t.matchAll(/(\d+)([dhms])/g)) {
    const unit = { d: 86400, h: 3600, m: 60, s: 1 }[m[2] as "d" | "h" | "m" | "s"];
    total += Number(m[1]) * unit;
  }
  return total;
}

/** `since` as Unix seconds (a duration counts back from `nowSeconds`); null when it does not parse. */
export function sinceSeconds(since: string, nowSeconds: number): number | null {
  const d = durationSeconds(since);
  if (d !== null) return nowSeconds - d;
  const t = Date.parse(since);
  return Number.isNaN(t) ? null : t / 1000;
}

/** A CRN as the ledger stores it: the `svc` segment is optional on input. */
export function canonicalCrn(crn: string): string {
  const c = crn.trim();
  if (c.startsWith("crn:") && !c.startsWith("crn:svc:")) return "crn:svc:" + c.slice(4);
  return c;
}

/** Unix seconds of an event's `ts`. */
export function eventSeconds(e: HistoryEvent): number {
  return Date.parse(e.ts) / 1000;
}

/**
 * Whether `e` belongs on the page the filters select, as the API decides:
 * type exactly (`s.a.u_ACTION` for every s.a.u decision), CRN exactly,
 * status ignoring case, `since` at or after, `until` before. A filter that
 * does not parse admits nothing (the API refuses it).
 */
export function matches(e: HistoryEvent, f: HistoryFilters, nowSeconds: number = Date.now() / 1000): boolean {
  const type = f.type.trim();
  if (type !== "") {
    if (type === SAU_ACTION ? !SAU_ACTION_TYPES.includes(e.type) : e.type !== type) return false;
  }
  if (f.crn.trim() !== "" && e.crn !== canonicalCrn(f.crn)) return false;
  if (f.status.trim() !== "" && e.status.toUpperCase() !== f.status.trim().toUpperCase()) return false;
  const ts = eventSeconds(e);
  if (f.since.trim() !== "") {
    const s = sinceSeconds(f.since, nowSeconds);
    if (s === null || ts < Math.floor(s)) return false;
  }
  if (f.until.trim() !== "") {
    const u = Date.parse(f.until.trim());
    if (Number.isNaN(u) || ts >= u / 1000) return false;
  }
  return true;
}

/** A frame of the `/events` stream as a history event. */
export function fromEnvelope(e: LedgerEvent): HistoryEvent {
  return {
    actor: e.actor,
    crn: e.crn,
    hash: e.hash,
    id: e.id,
    message: e.message,
    meta: e.payload,
    seq: e.seq,
    session_id: e.session_id,
    status: statusOf(e.event_type),
    ts: rfc3339(e.timestamp),
    type: e.event_type,
  };
}

/**
 * `live` events (newest first) ahead of `page`, each seq once: what the
 * timeline shows after events arrived while a page was on its way.
 */
export function mergeNewest(live: readonly HistoryEvent[], page: readonly HistoryEvent[]): HistoryEvent[] {
  const seen = new Set<number>();
  const out: HistoryEvent[] = [];
  for (const e of [...live, ...page]) {
    if (seen.has(e.seq)) continue;
    seen.add(e.seq);
    out.push(e);
  }
  return out.sort((a, b) => b.seq - a.seq);
}

/** The first `n` hex digits of a hash. */
export function shortHash(hash: string, n = 12): string {
  return hash.slice(0, n);
}

/** The colour class of a status badge. */
export function statusClass(status: string): string {
  switch (status) {
    case "APPROVED":
      return "good";
    case "REJECTED":
      return "bad";
    case "QUARANTINED":
      return "warn";
    default:
      return "";
  }
}

type Meta = Record<string, unknown>;

function str(m: Meta, k: string): string {
  const v = m[k];
  return typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : "";
}

function n(m: Meta, k: string): number | null {
  const v = m[k];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function join(parts: (string | null | false | undefined)[]): string {
  return parts.filter((p): p is string => typeof p === "string" && p !== "").join(" · ");
}

function ttl(seconds: number | null): string | null {
  if (seconds === null) return null;
  if (seconds === 0) return "permanent";
  if (seconds % 86400 === 0) return `for ${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `for ${seconds / 3600} h`;
  return `for ${num(seconds)} s`;
}

/**
 * One line saying what the payload holds, for the types whose payload
 * shape is declared; other types list their first scalar fields.
 */
export function payloadSummary(type: string, meta: Meta): string {
  switch (type) {
    case "SCAN_COMPLETED": {
      const nodes = n(meta, "node_count");
      const waste = n(meta, "waste_count");
      const wasteUsd = n(meta, "waste_usd_mo");
      const ms = n(meta, "duration_ms");
      return join([
        n(meta, "scan_seq") !== null ? `scan ${num(n(meta, "scan_seq"))}` : null,
        nodes !== null ? `${num(nodes)} nodes` : null,
        waste !== null ? `${num(waste)} waste` : null,
        wasteUsd !== null ? `${money(wasteUsd)}/mo waste` : null,
        ms !== null ? `${num(ms)} ms` : null,
      ]);
    }
    case "POLICY_CHANGE": {
      const action = str(meta, "action");
      const order = Array.isArray(meta.order) ? (meta.order as unknown[]).map(String) : null;
      return join([
        action === "REORDERED" && order ? `REORDERED: ${order.slice(0, 5).join(", ")}${order.length > 5 ? ", …" : ""}` : null,
        action !== "REORDERED" ? join([str(meta, "rule_id"), action]) : null,
        str(meta, "enforcement_mode") !== "" ? str(meta, "enforcement_mode") : null,
        str(meta, "rule_action") !== "" ? `action ${str(meta, "rule_action")}` : null,
        str(meta, "author") !== "" ? `by ${str(meta, "author")}` : null,
      ]);
    }
    case "ISOLATION":
      return join([
        str(meta, "action"),
        str(meta, "reason_code") !== "" ? `reason ${str(meta, "reason_code")}` : null,
        ttl(n(meta, "ttl_seconds")),
        str(meta, "author_identifier") !== "" ? `by ${str(meta, "author_identifier")}` : null,
      ]);
    case "APPROVAL":
      return join([
        str(meta, "intent"),
        n(meta, "savings_usd_mo") !== null ? `saves ${money(n(meta, "savings_usd_mo"))}/mo` : null,
        str(meta, "plan_hash") !== "" ? `plan ${shortHash(str(meta, "plan_hash"))}` : null,
      ]);
    case "REJECTION":
      return join([str(meta, "stage") !== "" ? `at ${str(meta, "stage")}` : null, str(meta, "reason")]);
    case "QUARANTINE":
      return join([str(meta, "action"), str(meta, "reason")]);
    case "QUARANTINE_REVERTED":
      return join([str(meta, "action"), str(meta, "reverted")]);
    case "EXECUTION_COMMIT":
      return join([
        str(meta, "intent"),
        n(meta, "step_index") !== null ? `step ${n(meta, "step_index")}` : null,
        str(meta, "status"),
        n(meta, "blast_radius") !== null ? `blast radius ${num(n(meta, "blast_radius"))}` : null,
        n(meta, "duration_ms") !== null ? `${num(n(meta, "duration_ms"))} ms` : null,
      ]);
    case "EXECUTION_ROLLBACK":
      return join([str(meta, "compensating_action"), str(meta, "status"), str(meta, "reason")]);
    case "PIPELINE_MOVE":
      return join([
        str(meta, "from") !== "" || str(meta, "to") !== "" ? `${str(meta, "from") || "–"} → ${str(meta, "to") || "–"}` : null,
        str(meta, "reason"),
      ]);
    case "HISTORY_PRUNED":
      return join([
        n(meta, "pruned") !== null ? `${num(n(meta, "pruned"))} events pruned` : null,
        n(meta, "through_seq") !== null ? `through seq ${num(n(meta, "through_seq"))}` : null,
      ]);
    case "LOCK_TIMEOUT":
      return join([n(meta, "waited_seconds") !== null ? `waited ${num(n(meta, "waited_seconds"))} s` : null, str(meta, "reason")]);
    case "s.a.u_OVERRIDE":
      return join([str(meta, "reason"), Array.isArray(meta.blockers) ? `${meta.blockers.length} blockers overridden` : null]);
    default: {
      const parts: string[] = [];
      for (const [k, v] of Object.entries(meta)) {
        if (parts.length === 4) break;
        if (typeof v === "string" && v !== "" && v.length <= 80) parts.push(`${k} ${v}`);
        else if (typeof v === "number" || typeof v === "boolean") parts.push(`${k} ${String(v)}`);
      }
      return parts.join(" · ");
    }
  }
}

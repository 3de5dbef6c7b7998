// The node page's own logic: the versions of a node through time (which one
// was valid at an instant, how two of them differ) and the text forms of
// instants, kept out of the component so it can be tested alone.
import type { Schemas } from "../api/types";

export type Node = Schemas["Node"];

/** `GET /api/v1/graph/nodes/{crn}/versions`: every stored version, newest first. */
export type NodeVersions = Schemas["NodeVersions"];

/** Microseconds since the epoch (the graph's `valid_from`/`valid_to`) to seconds. */
export function microsToSeconds(us: number): number {
  return Math.floor(us / 1_000_000);
}

/**
 * An instant typed by a person, in UTC: RFC 3339 (`2026-11-29T13:03:27Z`,
 * with an offset or fractional seconds too), or `YYYY-MM-DD[ HH:MM[:SS]]`
 * read as UTC. Microseconds since the epoch, or null when it does not parse.
 */
export function parseInstant(text: string): number | null {
  const t = text.trim();
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?)?\s*(Z|[+-]\d{2}:\d{2})?$/i.exec(t);
  if (!m) return null;
  const [, y, mo, d, h = "0", mi = "0", s = "0", frac = "", zone = "Z"] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  // Date.UTC rolls over out-of-range fields (Feb 30 -> Mar 2): refuse them.
  const back = new Date(ms);
  if (back.getUTCFullYear() !== Number(y) || back.getUTCMonth() !== Number(mo) - 1 || back.getUTCDate() !== Number(d)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  let offsetMin = 0;
  if (zone.toUpperCase() !== "Z") {
    const sign = zone.startsWith("-") ? -1 : 1;
    const [oh = "0", om = "0"] = zone.slice(1).split(":");
    offsetMin = sign * (Number(oh) * 60 + Number(om));
  }
  const fracUs = frac ? Math.round(Number(frac) * 1_000_000) : 0;
  return (ms - offsetMin * 60_000) * 1000 + fracUs;
}

/** An instant in microseconds as RFC 3339 UTC, to the second. */
export function instantText(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Whether `v` was the node's version at `us` (its `valid_to` is exclusive; 0 means still current). */
export function validAt(v: Node, us: number): boolean {
  return v.valid_from <= us && (v.valid_to === 0 || us < v.valid_to);
}

/** The version valid at `us`, or null when the node did not exist then (or was deleted). */
export function versionAt(versions: readonly Node[], us: number): Node | null {
  return versions.find((v) => validAt(v, us)) ?? null;
}

/** Versions oldest first, whatever order they came in. */
export function oldestFirst(versions: readonly Node[]): Node[] {
  return versions.slice().sort((a, b) => a.valid_from - b.valid_from);
}

export type ChangeKind = "added" | "removed" | "changed";

export interface Change {
  /** `state`, `properties.size_gib`, `tags.env`. */
  path: string;
  kind: ChangeKind;
  before?: unknown;
  after?: unknown;
}

/** Fields that say which version this is rather than what the resource was. */
const VERSION_FIELDS = new Set(["valid_from", "valid_to", "crn"]);
/** Fields compared key by key. */
const MAPS = new Set(["properties", "tags"]);

/** A value's canonical text: objects with their keys sorted, so key order never reads as a change. */
export function canonical(v: unknown): string {
  if (v === undefined) return "undefined";
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(",")}}`;
}

function diffMap(prefix: string, a: Record<string, unknown>, b: Record<string, unknown>, out: Change[]): void {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of [...keys].sort()) {
    const inA = Object.prototype.hasOwnProperty.call(a, k);
    const inB = Object.prototype.hasOwnProperty.call(b, k);
    const path = `${prefix}.${k}`;
    if (inA && !inB) out.push({ path, kind: "removed", before: a[k] });
    else if (!inA && inB) out.push({ path, kind: "added", after: b[k] });
    else if (canonical(a[k]) !== canonical(b[k])) out.push({ path, kind: "changed", before: a[k], after: b[k] });
  }
}

/**
 * What changed from version `a` to version `b` of a node: its fields, then
 * its properties and tags key by key; each list sorted by path. The
 * version's own bounds (`valid_from`, `valid_to`) are not changes.
 */
export function diffVersions(a: Node, b: Node): Change[] {
  const fields: Change[] = [];
  const maps: Change[] = [];
  const ra = a as unknown as Record<string, unknown>;
  const rb = b as unknown as Record<string, unknown>;
  const keys = new Set([...Object.keys(ra), ...Object.keys(rb)]);
  for (const k of [...keys].sort()) {
    if (VERSION_FIELDS.has(k)) continue;
    if (MAPS.has(k)) {
      const ma = (ra[k] ?? {}) as Record<string, unknown>;
      const mb = (rb[k] ?? {}) as Record<string, unknown>;
      diffMap(k, ma, mb, maps);
      continue;
    }
    const inA = k in ra;
    const inB = k in rb;
    if (inA && !inB) fields.push({ path: k, kind: "removed", before: ra[k] });
    else if (!inA && inB) fields.push({ path: k, kind: "added", after: rb[k] });
    else if (canonical(ra[k]) !== canonical(rb[k])) fields.push({ path: k, kind: "changed", before: ra[k], after: rb[k] });
  }
  return [...fields, ...maps];
}

/** A property value as one line of text: strings bare, the rest as JSON. */
export function valueText(v: unknown): string {
  if (v === undefined) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** The number of changes per kind, for a summary line. */
export function countChanges(changes: readonly Change[]): Record<ChangeKind, number> {
  const c: Record<ChangeKind, number> = { added: 0, removed: 0, changed: 0 };
  for (const x of changes) c[x.kind] += 1;
  return c;
}

/** `GET /api/v1/drift/report?crn=`: one resource against the Terraform states. */
export type DriftReport = Schemas["DriftReport"];

/** What the Terraform states say of one resource, for its page. */
export type TerraformStatus =
  | { kind: "unconfigured" }
  | { kind: "unmanaged" }
  | { kind: "in_sync"; address: string }
  | { kind: "changed"; address: string; attributes: Schemas["AttributeDrift"][] }
  | { kind: "gone"; address: string; removedBySvc: boolean };

/** Reads a one-resource drift report into the resource's status. */
export function terraformStatus(r: DriftReport): TerraformStatus {
  if (!r.configured) return { kind: "unconfigured" };
  const changed = r.changed[0];
  if (changed) return { kind: "changed", address: changed.address, attributes: changed.attributes };
  const gone = r.gone[0];
  if (gone) return { kind: "gone", address: gone.address, removedBySvc: gone.removed_by_svc };
  if (r.provenance?.managed) return { kind: "in_sync", address: r.provenance.address };
  return { kind: "unmanaged" };
}

// The Explorer's own logic, kept out of the component: its filters as they
// live in the route's query (`#/explorer?provider=aws&waste=true&q=vol-0`),
// the query of `GET /api/v1/graph/nodes` they make, the stack of cursors
// that pages back and forth, and the columns of the CSV export.
import type { Query } from "../api/client";
import type { Schemas } from "../api/types";
import type { Column } from "./csv";

export const PAGE_SIZES = [50, 100, 500] as const;
export const DEFAULT_PAGE_SIZE = 50;

/** `"true"`, `"false"`, or `""` for either. */
export type WasteFilter = "" | "true" | "false";

export interface ExplorerFilters {
  provider: string;
  /** `<service>:<kind>`, exact. */
  type: string;
  /** Provider-reported state, exact. */
  state: string;
  waste: WasteFilter;
  /** `key` or `key=value`. */
  tag: string;
  /** Case-insensitive substring of the CRN. */
  q: string;
  limit: number;
}

export const NO_FILTERS: ExplorerFilters = { provider: "", type: "", state: "", waste: "", tag: "", q: "", limit: DEFAULT_PAGE_SIZE };

/** The filters a route's query names; anything malformed reads as unset. */
export function filtersFromQuery(q: URLSearchParams): ExplorerFilters {
  const text = (k: string) => (q.get(k) ?? "").trim();
  const waste = text("waste").toLowerCase();
  const limit = Number(text("limit"));
  return {
    provider: text("provider"),
    type: text("type"),
    state: text("state"),
    waste: waste === "true" || waste === "false" ? waste : "",
    tag: text("tag"),
    q: text("q"),
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE,
  };
}

/** The route query of `f` for `href("explorer", [], ...)`: unset filters and the default page size left out. */
export function filtersToQuery(f: ExplorerFilters): Record<string, string | undefined> {
  return {
    provider: f.provider.trim() || undefined,
    type: f.type.trim() || undefined,
    state: f.state.trim() || undefined,
    waste: f.waste || undefined,
    tag: f.tag.trim() || undefined,
    q: f.q.trim() || undefined,
    limit: f.limit === DEFAULT_PAGE_SIZE ? undefined : String(f.limit),
  };
}

/** The query of `GET /api/v1/graph/nodes` for one page of `f`, from `cursor` ("" for the first). */
export function nodesQuery(f: ExplorerFilters, cursor: string): Query {
  return { ...filtersToQuery(f), limit: f.limit, cursor: cursor || undefined };
}

/** Whether any filter narrows the listing. */
export function isFiltered(f: ExplorerFilters): boolean {
  return Boolean(f.provider || f.type || f.state || f.waste || f.tag || f.q);
}

/** The same filters, compared by what they ask of the API (page size included). */
export function sameFilters(a: ExplorerFilters, b: ExplorerFilters): boolean {
  const qa = filtersToQuery(a);
  const qb = filtersToQuery(b);
  return (Object.keys(qa) as (keyof typeof qa)[]).every((k) => qa[k] === qb[k]);
}

/**
 * Where the listing stands: `stack` holds the cursor of every page before
 * the current one (the first page's cursor is ""), `cursor` the current.
 */
export interface Paging {
  stack: string[];
  cursor: string;
}

export const FIRST_PAGE: Paging = { stack: [], cursor: "" };

export function nextPage(p: Paging, nextCursor: string): Paging {
  if (!nextCursor) return p;
  return { stack: [...p.stack, p.cursor], cursor: nextCursor };
}

export function previousPage(p: Paging): Paging {
  if (p.stack.length === 0) return p;
  return { stack: p.stack.slice(0, -1), cursor: p.stack[p.stack.length - 1] ?? "" };
}

/** "1–50", the rows of the page shown, 1-based; "0" when it is empty. */
export function rowRange(p: Paging, limit: number, rows: number): string {
  if (rows === 0) return "0";
  const first = p.stack.length * limit + 1;
  return `${first}–${first + rows - 1}`;
}

type Node = Schemas["Node"];

/** The columns of the CSV export: every field the table shows, CRN in full. */
export const CSV_COLUMNS: readonly Column<Node>[] = [
  { header: "crn", value: (n) => n.crn },
  { header: "type", value: (n) => n.type },
  { header: "provider", value: (n) => n.provider },
  { header: "account", value: (n) => n.account },
  { header: "region", value: (n) => n.region },
  { header: "state", value: (n) => n.state },
  { header: "cost_usd_mo", value: (n) => n.cost_usd_mo },
  { header: "is_waste", value: (n) => n.is_waste },
  { header: "waste_reason", value: (n) => n.waste_reason },
  { header: "risk_score", value: (n) => n.risk_score },
  { header: "phase", value: (n) => n.phase },
];

/** The name of the CSV file of a page: the filters and the page's rows. */
export function csvName(f: ExplorerFilters, p: Paging, rows: number): string {
  const parts = ["nodes"];
  for (const v of [f.provider, f.type, f.state, f.waste ? `waste-${f.waste}` : "", f.tag, f.q]) {
    if (v) parts.push(v);
  }
  parts.push(rowRange(p, f.limit, rows));
  return parts.join("_").replace(/[^A-Za-z0-9._=-]+/g, "-") + ".csv";
}

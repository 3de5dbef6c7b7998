// Loads the laid-out graph for the Graph view: the binary form (SPEC 2.4)
// when the daemon serves it, which carries the whole graph (up to about
// 100,000 nodes); otherwise the JSON form, cut at its maximum of 20,000.
import { get, request } from "../api/client";
import { fromLayoutJson, type GraphModel } from "./graph-data";
import { decodeGraph, isGraphBuffer, nodeCount, type Totals } from "./graph-fbs";

export const FLATBUFFERS = "application/x-flatbuffers";
/** Most nodes the JSON form of `/api/v1/graph/topology` gives. */
export const JSON_MAX = 20_000;

export type Format = "binary" | "json";

export interface Loaded {
  model: GraphModel;
  format: Format;
  /** Size of the body. */
  bytes: number;
  /** Request until the body is in, in milliseconds. */
  fetchMs: number;
  /** Body to typed arrays, in milliseconds. */
  decodeMs: number;
}

/** Totals a binary answer may carry in headers (the form has no field for them). */
export function totalsFromHeaders(h: Headers): Totals {
  const total = h.get("x-total-nodes") ?? h.get("x-svc-total-nodes");
  const truncated = h.get("x-truncated") ?? h.get("x-svc-truncated");
  const n = total === null ? NaN : Number(total);
  return {
    totalNodes: Number.isFinite(n) && n >= 0 ? n : null,
    truncated: truncated === null ? null : truncated === "true" || truncated === "1",
  };
}

function isBinary(res: Response): boolean {
  return (res.headers.get("content-type") ?? "").toLowerCase().startsWith(FLATBUFFERS);
}

async function loadJson(signal: AbortSignal, first?: Response, t0 = performance.now()): Promise<Loaded> {
  let res = first ?? (await request("GET", "/api/v1/graph/topology", { query: { limit: JSON_MAX }, signal }));
  let text = await res.text();
  let t1 = performance.now();
  let body = JSON.parse(text) as Parameters<typeof fromLayoutJson>[0];
  // The default answer (2000 nodes) is enough for a small graph; a larger
  // one is asked for again, as large as the JSON form goes.
  if (body.truncated && body.nodes.length < JSON_MAX) {
    t0 = performance.now();
    res = await request("GET", "/api/v1/graph/topology", { query: { limit: JSON_MAX }, signal });
    text = await res.text();
    t1 = performance.now();
    body = JSON.parse(text) as typeof body;
  }
  const model = fromLayoutJson(body);
  const t2 = performance.now();
  return { model, format: "json", bytes: text.length, fetchMs: t1 - t0, decodeMs: t2 - t1 };
}

/**
 * The graph, binary when the daemon answers `Accept: application/x-flatbuffers`
 * with it (told by the content type), JSON otherwise or when `prefer` is json.
 *
 * The binary form carries no clusters and no totals: they come from the
 * JSON form's `clusters_only` answer with `limit` set to the number of
 * nodes received, which chooses the same nodes (a limit takes a prefix of
 * one deterministic order).
 */
export async function loadGraph(signal: AbortSignal, prefer: Format = "binary"): Promise<Loaded> {
  if (prefer === "json") return loadJson(signal);
  const t0 = performance.now();
  // No limit: the binary form's default (100,000); a daemon without the
  // binary form answers its JSON default, and the JSON path takes over.
  const res = await request("GET", "/api/v1/graph/topology", { accept: FLATBUFFERS, signal });
  if (!isBinary(res)) return loadJson(signal, res, t0);
  const buf = new Uint8Array(await res.arrayBuffer());
  const t1 = performance.now();
  if (!isGraphBuffer(buf)) throw new Error("the daemon's binary graph has no SVCG identifier");
  const clusters = get("/api/v1/graph/topology", { query: { limit: Math.max(1, nodeCount(buf)), clusters_only: true }, signal }).catch(
    (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
  );
  const t2 = performance.now();
  const model = decodeGraph(buf, totalsFromHeaders(res.headers));
  const t3 = performance.now();
  const c = await clusters;
  if (!(c instanceof Error)) {
    model.useClusterBounds(c.clusters);
    model.totalNodes ??= c.total_nodes;
    model.truncated = c.truncated;
  }
  return { model, format: "binary", bytes: buf.length, fetchMs: t1 - t0, decodeMs: t3 - t2 };
}

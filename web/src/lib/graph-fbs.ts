// The binary graph form (SPEC 2.4, schemas/graph.fbs, file identifier
// "SVCG") decoded into a GraphModel: fields are read straight from the
// buffer into typed arrays; strings are decoded only when shown (a CRN when
// a node is selected or searched), never one object per node.
//
// The topology endpoints put the layout in each node's properties: `x`, `y`
// (decimal strings, layout units) and `cluster` (`provider/account/region`);
// `provider` and `waste`/`is_waste` are read when present.
import { ByteBuffer } from "flatbuffers";
import { Graph } from "../fbs/graph";
import { clustersFromNodes, GraphModel, NO_CLUSTER, providerFromCrn, WASTE_NO, WASTE_UNKNOWN, WASTE_YES, type NodeText } from "./graph-data";

// vtable slots (4 + 2 * field index) of schemas/graph.fbs.
const GRAPH_NODES = 4;
const GRAPH_EDGES = 6;
const NODE_CRN = 4;
const NODE_TYPE = 6;
const NODE_COST = 10;
const NODE_PROPERTIES = 12;
const PROP_KEY = 4;
const PROP_VALUE = 6;
const EDGE_SOURCE = 4;
const EDGE_TARGET = 6;

const enc = new TextEncoder();
const dec = new TextDecoder();
const KEY_X = enc.encode("x");
const KEY_Y = enc.encode("y");
const KEY_CLUSTER = enc.encode("cluster");
const KEY_PROVIDER = enc.encode("provider");
const KEY_WASTE = enc.encode("waste");
const KEY_IS_WASTE = enc.encode("is_waste");

export class GraphDecodeError extends Error {}

/** Totals the binary form does not carry (the response's headers may). */
export interface Totals {
  totalNodes: number | null;
  truncated: boolean | null;
}

/**
 * Open addressing from a non-negative int key to an int value (-1 when
 * absent), growing to stay at most half full; a Map of 100,000 entries
 * costs more.
 */
class IntTable {
  private keys: Int32Array;
  private vals: Int32Array;
  private mask: number;
  private size = 0;
  constructor(capacity: number) {
    let n = 16;
    while (n < capacity * 2) n <<= 1;
    this.keys = new Int32Array(n).fill(-1);
    this.vals = new Int32Array(n);
    this.mask = n - 1;
  }
  private slot(k: number): number {
    let h = Math.imul(k, 0x9e3779b1) & this.mask;
    while (this.keys[h] !== -1 && this.keys[h] !== k) h = (h + 1) & this.mask;
    return h;
  }
  set(k: number, v: number): void {
    let h = this.slot(k);
    if (this.keys[h] !== k) {
      if (2 * (this.size + 1) > this.keys.length) {
        this.grow();
        h = this.slot(k);
      }
      this.size++;
    }
    this.keys[h] = k;
    this.vals[h] = v;
  }
  get(k: number): number {
    const h = this.slot(k);
    return this.keys[h] === k ? this.vals[h]! : -1;
  }
  private grow(): void {
    const keys = this.keys;
    const vals = this.vals;
    this.keys = new Int32Array(keys.length * 2).fill(-1);
    this.vals = new Int32Array(keys.length * 2);
    this.mask = this.keys.length - 1;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      if (k === -1) continue;
      const h = this.slot(k);
      this.keys[h] = k;
      this.vals[h] = vals[i]!;
    }
  }
}

/** Reads a buffer of the binary form (little-endian words, read inline). */
class Reader {
  readonly u8: Uint8Array;
  readonly bb: ByteBuffer;
  readonly dv: DataView;
  constructor(bytes: Uint8Array) {
    this.u8 = bytes;
    this.bb = new ByteBuffer(bytes);
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  i32(p: number): number {
    return this.dv.getInt32(p, true);
  }
  u16(p: number): number {
    return this.dv.getUint16(p, true);
  }
  /** The absolute position of a table field, or 0 when it is absent. */
  field(table: number, slot: number): number {
    const vt = table - this.i32(table);
    if (slot >= this.u16(vt)) return 0;
    const o = this.u16(vt + slot);
    return o ? table + o : 0;
  }
  /** The position of the string (its length word) a field points to, or 0. */
  str(table: number, slot: number): number {
    const f = this.field(table, slot);
    return f ? f + this.i32(f) : 0;
  }
  strLen(s: number): number {
    return this.i32(s);
  }
  text(s: number): string {
    if (!s) return "";
    const len = this.strLen(s);
    return dec.decode(this.u8.subarray(s + 4, s + 4 + len));
  }
  /** The string at `s` equals `b`. */
  equals(s: number, b: Uint8Array): boolean {
    if (!s || this.strLen(s) !== b.length) return false;
    const u = this.u8;
    for (let k = 0, p = s + 4; k < b.length; k++, p++) if (u[p] !== b[k]) return false;
    return true;
  }
  /** The vector a field points to: [position of the first element, length]. */
  vector(table: number, slot: number): [number, number] {
    const f = this.field(table, slot);
    if (!f) return [0, 0];
    const v = f + this.i32(f);
    return [v + 4, this.i32(v)];
  }
  /** The table at element `i` of a vector of tables starting at `v`. */
  tableAt(v: number, i: number): number {
    const p = v + 4 * i;
    return p + this.i32(p);
  }
  hash(s: number): number {
    const len = this.strLen(s);
    let h = 0x811c9dc5;
    const u = this.u8;
    for (let p = s + 4, end = s + 4 + len; p < end; p++) h = Math.imul(h ^ u[p]!, 16777619);
    return h >>> 0;
  }
  sameString(a: number, b: number): boolean {
    if (a === b) return true;
    const len = this.strLen(a);
    if (len !== this.strLen(b)) return false;
    const u = this.u8;
    for (let k = 4; k < len + 4; k++) if (u[a + k] !== u[b + k]) return false;
    return true;
  }
}

/**
 * A decimal number written as ASCII at `s` (sign, digits, point, digits,
 * exponent), parsed without making a string; NaN when it is not one.
 */
export function parseDecimal(u8: Uint8Array, start: number, len: number): number {
  let p = start;
  const end = start + len;
  let neg = false;
  if (p < end && (u8[p] === 45 || u8[p] === 43)) {
    neg = u8[p] === 45;
    p++;
  }
  let v = 0;
  let digits = 0;
  while (p < end && u8[p]! >= 48 && u8[p]! <= 57) {
    v = v * 10 + (u8[p]! - 48);
    p++;
    digits++;
  }
  if (p < end && u8[p] === 46) {
    p++;
    let f = 0.1;
    while (p < end && u8[p]! >= 48 && u8[p]! <= 57) {
      v += (u8[p]! - 48) * f;
      f *= 0.1;
      p++;
      digits++;
    }
  }
  if (digits === 0) return NaN;
  if (p < end && (u8[p] === 101 || u8[p] === 69)) {
    // Rare in layout coordinates: let the platform do it exactly.
    return Number(dec.decode(u8.subarray(start, end)));
  }
  if (p !== end) return NaN;
  return neg ? -v : v;
}

/** Whether the bytes look like the binary graph form. */
export function isGraphBuffer(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && Graph.bufferHasIdentifier(new ByteBuffer(bytes));
}

/** How many nodes a `Graph` buffer holds (0 when it is not one). */
export function nodeCount(bytes: Uint8Array): number {
  if (!isGraphBuffer(bytes)) return 0;
  const r = new Reader(bytes);
  const root = r.i32(0);
  if (root < 0 || root + 4 > bytes.length) return 0;
  return r.vector(root, GRAPH_NODES)[1];
}

/** Decodes a `Graph` buffer; throws GraphDecodeError when it is not one. */
export function decodeGraph(bytes: Uint8Array, totals: Totals = { totalNodes: null, truncated: null }): GraphModel {
  try {
    return decode(bytes, totals);
  } catch (e) {
    // A read past the end (DataView) or an absurd length (typed arrays).
    if (e instanceof RangeError) throw new GraphDecodeError(`the binary graph is malformed (${e.message})`);
    throw e;
  }
}

function decode(bytes: Uint8Array, totals: Totals): GraphModel {
  if (!isGraphBuffer(bytes)) throw new GraphDecodeError("the answer is not the binary graph form (no SVCG identifier)");
  const r = new Reader(bytes);
  const bb = r.bb;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let root: number;
  try {
    root = Graph.getRootAsGraph(bb).bb_pos;
  } catch {
    throw new GraphDecodeError("the binary graph is malformed");
  }
  const u8 = r.u8;
  const check = (p: number) => {
    if (!(p >= 0 && p + 4 <= u8.length)) throw new GraphDecodeError("the binary graph is malformed (offset out of range)");
  };
  check(root);
  const [nv, n] = r.vector(root, GRAPH_NODES);
  if (n > 0) check(nv + 4 * (n - 1));
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  const provider = new Uint8Array(n);
  const waste = new Uint8Array(n);
  const cluster = new Uint32Array(n).fill(NO_CLUSTER);
  const tables = new Uint32Array(n);
  const crnAt = new Uint32Array(n);
  const byCrnOffset = new IntTable(n);
  const providers: string[] = [];
  const providerByName = new Map<string, number>();
  const providerByOffset = new IntTable(64);
  const clusterIds: string[] = [];
  const clusterByName = new Map<string, number>();
  const clusterByOffset = new IntTable(1024);
  const clusterProvider: number[] = [];
  let missingPosition = 0;

  const internProvider = (name: string): number => {
    let k = providerByName.get(name);
    if (k === undefined) {
      k = providers.length < 255 ? providers.push(name) - 1 : 255;
      providerByName.set(name, k);
    }
    return k;
  };

  for (let i = 0; i < n; i++) {
    const t = r.tableAt(nv, i);
    check(t);
    tables[i] = t;
    const crn = r.str(t, NODE_CRN);
    if (!crn) throw new GraphDecodeError(`node ${i} has no CRN`);
    check(crn);
    crnAt[i] = crn;
    byCrnOffset.set(crn, i);
    let px = NaN;
    let py = NaN;
    let prov = -1;
    const [pv, pn] = r.vector(t, NODE_PROPERTIES);
    for (let k = 0; k < pn; k++) {
      const p = r.tableAt(pv, k);
      const key = r.str(p, PROP_KEY);
      const val = r.str(p, PROP_VALUE);
      if (!key || !val) continue;
      const klen = r.strLen(key);
      if (klen === 1) {
        if (u8[key + 4] === KEY_X[0]) px = parseDecimal(u8, val + 4, r.strLen(val));
        else if (u8[key + 4] === KEY_Y[0]) py = parseDecimal(u8, val + 4, r.strLen(val));
      } else if (r.equals(key, KEY_CLUSTER)) {
        let c = clusterByOffset.get(val);
        if (c < 0) {
          const id = r.text(val);
          c = clusterByName.get(id) ?? -1;
          if (c < 0) {
            c = clusterIds.push(id) - 1;
            clusterByName.set(id, c);
            clusterProvider.push(internProvider(id.split("/", 1)[0] ?? ""));
          }
          clusterByOffset.set(val, c);
        }
        cluster[i] = c;
      } else if (r.equals(key, KEY_PROVIDER)) {
        prov = providerByOffset.get(val);
        if (prov < 0) {
          prov = internProvider(r.text(val));
          providerByOffset.set(val, prov);
        }
      } else if (r.equals(key, KEY_WASTE) || r.equals(key, KEY_IS_WASTE)) {
        const c0 = u8[val + 4];
        // "true"/"1" or "false"/"0".
        waste[i] = c0 === 116 || c0 === 49 ? WASTE_YES : c0 === 102 || c0 === 48 ? WASTE_NO : WASTE_UNKNOWN;
      }
    }
    if (Number.isNaN(px) || Number.isNaN(py)) missingPosition++;
    x[i] = Number.isNaN(px) ? 0 : px;
    y[i] = Number.isNaN(py) ? 0 : py;
    if (prov < 0) {
      const c = cluster[i]!;
      prov = c !== NO_CLUSTER ? clusterProvider[c]! : internProvider(providerFromCrn(r.text(crn)));
    }
    provider[i] = prov;
  }
  if (n > 0 && missingPosition === n) throw new GraphDecodeError("the binary graph carries no positions (no x, y properties)");

  // CRN → node index by the bytes (hash chains), built only when needed:
  // an edge naming a CRN by a string other than its node's (the encoder
  // normally shares it), or a search by CRN.
  let byHash: IntTable | null = null;
  let hashNext: Int32Array = new Int32Array(0);
  const chains = (): IntTable => {
    if (byHash) return byHash;
    const t = new IntTable(n);
    hashNext = new Int32Array(n).fill(-1);
    for (let i = 0; i < n; i++) {
      const h = r.hash(crnAt[i]!) & 0x7fffffff;
      hashNext[i] = t.get(h);
      t.set(h, i);
    }
    byHash = t;
    return t;
  };
  const lookupBytes = (s: number): number => {
    for (let i = chains().get(r.hash(s) & 0x7fffffff); i >= 0; i = hashNext[i]!) {
      if (r.sameString(crnAt[i]!, s)) return i;
    }
    return -1;
  };
  const nodeOf = (s: number): number => {
    if (!s) return -1;
    const i = byCrnOffset.get(s);
    return i >= 0 ? i : lookupBytes(s);
  };

  const [ev, m] = r.vector(root, GRAPH_EDGES);
  const pairs = new Uint32Array(2 * m);
  let e = 0;
  for (let k = 0; k < m; k++) {
    const t = r.tableAt(ev, k);
    check(t);
    const s = nodeOf(r.str(t, EDGE_SOURCE));
    const d = nodeOf(r.str(t, EDGE_TARGET));
    if (s < 0 || d < 0) continue;
    pairs[e++] = s;
    pairs[e++] = d;
  }

  const clusters = clustersFromNodes(clusterIds, cluster, x, y, n);
  const text: NodeText = {
    crn: (i) => (i < n ? r.text(crnAt[i]!) : ""),
    type: (i) => (i < n ? r.text(r.str(tables[i]!, NODE_TYPE)) : ""),
    cost: (i) => {
      if (i >= n) return null;
      const f = r.field(tables[i]!, NODE_COST);
      return f ? view.getFloat32(f, true) : 0;
    },
    indexOf: (crn) => {
      const b = enc.encode(crn);
      let h = 0x811c9dc5;
      for (let k = 0; k < b.length; k++) h = Math.imul(h ^ b[k]!, 16777619);
      for (let i = chains().get((h >>> 0) & 0x7fffffff); i >= 0; i = hashNext[i]!) {
        if (r.equals(crnAt[i]!, b)) return i;
      }
      return -1;
    },
  };
  const truncated = totals.truncated ?? (totals.totalNodes !== null ? totals.totalNodes > n : false);
  return new GraphModel("binary", n, x, y, provider, waste, cluster, pairs.subarray(0, e), providers, clusters, text, totals.totalNodes, truncated);
}

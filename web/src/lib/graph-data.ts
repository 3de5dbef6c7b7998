// The graph the Graph view draws, held in typed arrays (one slot per node,
// no object per node) whether it came as JSON or as the binary form: the
// renderer uploads the arrays as they are, and picking reads them.
import type { components } from "../api/schema";
import type { Bounds } from "./graph-view";

type LayoutGraph = components["schemas"]["LayoutGraph"];
type FlowNode = components["schemas"]["FlowNode"];

export interface ClusterInfo {
  /** `provider/account/region`. */
  id: string;
  provider: string;
  account: string;
  region: string;
  /** Drawn nodes in the cluster. */
  count: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Text of the nodes as loaded, read on demand (a binary buffer keeps it). */
export interface NodeText {
  crn(i: number): string;
  type(i: number): string;
  /** Monthly cost in USD, or null when the form does not carry it. */
  cost(i: number): number | null;
  /** The node's index by CRN, or -1. */
  indexOf(crn: string): number;
}

export const WASTE_UNKNOWN = 0;
export const WASTE_NO = 1;
export const WASTE_YES = 2;

/** No cluster. */
export const NO_CLUSTER = 0xffffffff;

/** Distance between neighbouring nodes of the daemon's layout. */
export const NODE_SPACING = 60;

export class GraphModel {
  /** Nodes drawn (loaded plus those a neighbourhood added). */
  count: number;
  x: Float32Array;
  y: Float32Array;
  /** Index into `providers`. */
  provider: Uint8Array;
  /** WASTE_UNKNOWN, WASTE_NO or WASTE_YES. */
  waste: Uint8Array;
  /** Index into `clusters`, or NO_CLUSTER. */
  cluster: Uint32Array;
  /** Node index pairs (source, target). */
  edges: Uint32Array;
  /** CRNs of nodes added after loading (index `loaded + k`). */
  private added: string[] = [];
  private addedIndex = new Map<string, number>();
  private lowerCrns: string[] | null = null;

  constructor(
    readonly source: "json" | "binary",
    /** Nodes that came with the graph. */
    readonly loaded: number,
    x: Float32Array,
    y: Float32Array,
    provider: Uint8Array,
    waste: Uint8Array,
    cluster: Uint32Array,
    edges: Uint32Array,
    readonly providers: string[],
    readonly clusters: ClusterInfo[],
    private readonly text: NodeText,
    /** Visible nodes in the graph, as the API reports; null when unknown. */
    public totalNodes: number | null,
    public truncated: boolean,
  ) {
    this.count = loaded;
    this.x = x;
    this.y = y;
    this.provider = provider;
    this.waste = waste;
    this.cluster = cluster;
    this.edges = edges;
  }

  get edgeCount(): number {
    return this.edges.length / 2;
  }

  crn(i: number): string {
    return i < this.loaded ? this.text.crn(i) : (this.added[i - this.loaded] ?? "");
  }

  type(i: number): string {
    return i < this.loaded ? this.text.type(i) : typeFromCrn(this.crn(i));
  }

  cost(i: number): number | null {
    return i < this.loaded ? this.text.cost(i) : null;
  }

  indexOf(crn: string): number {
    const i = this.text.indexOf(crn);
    if (i >= 0) return i;
    return this.addedIndex.get(crn) ?? -1;
  }

  /** Whether node `i` was added by a neighbourhood (not in the loaded graph). */
  isAdded(i: number): boolean {
    return i >= this.loaded;
  }

  bounds(): Bounds {
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let i = 0; i < this.count; i++) {
      const x = this.x[i]!;
      const y = this.y[i]!;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    if (this.count === 0) return { minX: 0, minY: 0, maxX: 1, maxY: 1 };
    const pad = NODE_SPACING / 2;
    return { minX: minX - pad, minY: minY - pad, maxX: maxX + pad, maxY: maxY + pad };
  }

  /**
   * Adds nodes not drawn yet, placed on rings around node `around`; returns
   * their indices. Their provider is read from the CRN.
   */
  addNodes(crns: string[], around: number): number[] {
    const fresh = crns.filter((c) => this.indexOf(c) < 0);
    const unique = [...new Set(fresh)];
    if (unique.length === 0) return [];
    const n = this.count + unique.length;
    this.x = grow(this.x, n);
    this.y = grow(this.y, n);
    this.provider = grow(this.provider, n);
    this.waste = grow(this.waste, n);
    this.cluster = grow(this.cluster, n);
    const ox = this.x[around] ?? 0;
    const oy = this.y[around] ?? 0;
    const out: number[] = [];
    unique.forEach((crn, k) => {
      const i = this.count + k;
      const [px, py] = ringPosition(k);
      this.x[i] = ox + px;
      this.y[i] = oy + py;
      this.provider[i] = this.providerIndex(providerFromCrn(crn));
      this.waste[i] = WASTE_UNKNOWN;
      this.cluster[i] = NO_CLUSTER;
      this.added.push(crn);
      this.addedIndex.set(crn, i);
      out.push(i);
    });
    this.count = n;
    return out;
  }

  providerIndex(p: string): number {
    let k = this.providers.indexOf(p);
    if (k < 0 && this.providers.length < 255) {
      this.providers.push(p);
      k = this.providers.length - 1;
    }
    return k < 0 ? 255 : k;
  }

  /**
   * Cluster boxes as the API lays them out (`clusters_only`), for the
   * clusters the nodes name; a cluster the API does not list keeps the box
   * computed from its nodes.
   */
  useClusterBounds(api: readonly components["schemas"]["Cluster"][]): void {
    const byId = new Map(api.map((c) => [c.id, c]));
    this.clusters.forEach((c, k) => {
      const a = byId.get(c.id);
      if (!a) return;
      this.clusters[k] = { id: a.id, provider: a.provider, account: a.account, region: a.region, count: a.node_count, x: a.x, y: a.y, width: a.width, height: a.height };
    });
  }

  /** Waste verdicts from the flow graph (`GET /api/v1/graph`); returns how many matched. */
  applyWaste(nodes: readonly Pick<FlowNode, "id" | "data">[]): number {
    let n = 0;
    for (const f of nodes) {
      const i = this.indexOf(f.id);
      if (i < 0) continue;
      this.waste[i] = f.data.is_waste ? WASTE_YES : WASTE_NO;
      n++;
    }
    return n;
  }

  /** Nodes whose waste verdict is known. */
  wasteKnown(): number {
    let n = 0;
    for (let i = 0; i < this.count; i++) if (this.waste[i] !== WASTE_UNKNOWN) n++;
    return n;
  }

  /**
   * Up to `max` drawn nodes whose CRN contains `query` (case-insensitive),
   * an exact match first.
   */
  search(query: string, max = 20): number[] {
    const q = query.trim();
    if (!q) return [];
    const exact = this.indexOf(q);
    const out: number[] = exact >= 0 ? [exact] : [];
    const lower = q.toLowerCase();
    // The loaded CRNs, decoded once (the binary form keeps them as bytes).
    this.lowerCrns ??= Array.from({ length: this.loaded }, (_, i) => this.text.crn(i).toLowerCase());
    for (let i = 0; i < this.count && out.length < max; i++) {
      if (i === exact) continue;
      const c = i < this.loaded ? this.lowerCrns[i]! : this.crn(i).toLowerCase();
      if (c.includes(lower)) out.push(i);
    }
    return out;
  }
}

function grow<T extends Float32Array | Uint8Array | Uint32Array>(a: T, n: number): T {
  if (a.length >= n) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(n, Math.ceil(a.length * 1.25)));
  b.set(a);
  return b;
}

/** The k-th slot on rings around a point: 8 on the first, 16 on the next... */
export function ringPosition(k: number): [number, number] {
  let ring = 1;
  let first = 0;
  while (k >= first + 8 * ring) {
    first += 8 * ring;
    ring++;
  }
  const slots = 8 * ring;
  const a = (2 * Math.PI * (k - first)) / slots;
  const r = ring * NODE_SPACING * 0.75;
  return [r * Math.cos(a), r * Math.sin(a)];
}

/** `crn:<ns>:<provider>:...` (graph form) → provider; "" when it does not parse. */
export function providerFromCrn(crn: string): string {
  const parts = crn.split(":", 4);
  return parts[0] === "crn" ? (parts[2] ?? "") : "";
}

/** `crn:<ns>:<provider>:<region>:<service>:<type>:...` → `<service>:<type>`. */
export function typeFromCrn(crn: string): string {
  const parts = crn.split(":", 7);
  return parts.length >= 6 ? `${parts[4]}:${parts[5]}` : "";
}

/** Cluster boxes from the nodes' positions (when the form has no cluster list). */
export function clustersFromNodes(ids: readonly string[], cluster: Uint32Array, xs: Float32Array, ys: Float32Array, count: number): ClusterInfo[] {
  const k = ids.length;
  const minX = new Float64Array(k).fill(Infinity);
  const minY = new Float64Array(k).fill(Infinity);
  const maxX = new Float64Array(k).fill(-Infinity);
  const maxY = new Float64Array(k).fill(-Infinity);
  const counts = new Uint32Array(k);
  for (let i = 0; i < count; i++) {
    const c = cluster[i]!;
    if (c >= k) continue;
    const x = xs[i]!;
    const y = ys[i]!;
    if (x < minX[c]!) minX[c] = x;
    if (x > maxX[c]!) maxX[c] = x;
    if (y < minY[c]!) minY[c] = y;
    if (y > maxY[c]!) maxY[c] = y;
    counts[c]!++;
  }
  const pad = NODE_SPACING / 2;
  return ids.map((id, c) => {
    const [provider = "", account = "", region = ""] = id.split("/");
    const n = counts[c]!;
    return {
      id,
      provider,
      account,
      region,
      count: n,
      x: n ? minX[c]! - pad : 0,
      y: n ? minY[c]! - pad : 0,
      width: n ? maxX[c]! - minX[c]! + 2 * pad : 0,
      height: n ? maxY[c]! - minY[c]! + 2 * pad : 0,
    };
  });
}

/** The JSON form of `GET /api/v1/graph/topology` as typed arrays. */
export function fromLayoutJson(g: LayoutGraph): GraphModel {
  const n = g.nodes.length;
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  const provider = new Uint8Array(n);
  const waste = new Uint8Array(n);
  const cluster = new Uint32Array(n);
  const providers: string[] = [];
  const providerIdx = new Map<string, number>();
  const clusterIdx = new Map<string, number>();
  const clusters: ClusterInfo[] = g.clusters.map((c, k) => {
    clusterIdx.set(c.id, k);
    return { id: c.id, provider: c.provider, account: c.account, region: c.region, count: c.node_count, x: c.x, y: c.y, width: c.width, height: c.height };
  });
  const crns: string[] = new Array<string>(n);
  const types: string[] = new Array<string>(n);
  const index = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const node = g.nodes[i]!;
    x[i] = node.x;
    y[i] = node.y;
    let p = providerIdx.get(node.provider);
    if (p === undefined) {
      p = providers.length < 255 ? providers.push(node.provider) - 1 : 255;
      providerIdx.set(node.provider, p);
    }
    provider[i] = p;
    cluster[i] = clusterIdx.get(node.cluster) ?? NO_CLUSTER;
    crns[i] = node.crn;
    types[i] = node.type;
    index.set(node.crn, i);
  }
  const pairs: number[] = [];
  for (const e of g.edges) {
    const s = index.get(e.source);
    const t = index.get(e.target);
    if (s !== undefined && t !== undefined) pairs.push(s, t);
  }
  const text: NodeText = {
    crn: (i) => crns[i] ?? "",
    type: (i) => types[i] ?? "",
    cost: () => null,
    indexOf: (c) => index.get(c) ?? -1,
  };
  return new GraphModel("json", n, x, y, provider, waste, cluster, Uint32Array.from(pairs), providers, clusters, text, g.total_nodes, g.truncated);
}

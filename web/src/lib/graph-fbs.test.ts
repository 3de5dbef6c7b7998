import { Builder } from "flatbuffers";
import { describe, expect, it } from "vitest";
import { Edge, Graph, Node, Property } from "../fbs/graph";
import { NO_CLUSTER, WASTE_NO, WASTE_UNKNOWN, WASTE_YES } from "./graph-data";
import { decodeGraph, GraphDecodeError, isGraphBuffer, nodeCount, parseDecimal } from "./graph-fbs";

interface N {
  crn: string;
  type: string;
  cost?: number;
  props: [string, string][];
}

/** A `Graph` buffer as the daemon writes one; `shareCrns` reuses node CRN strings in edges. */
export function buildGraph(nodes: N[], edges: [string, string, number][], shareCrns = true): Uint8Array {
  const b = new Builder(1024);
  const shared = new Map<string, number>();
  const str = (s: string) => {
    let o = shared.get(s);
    if (o === undefined) {
      o = b.createString(s);
      shared.set(s, o);
    }
    return o;
  };
  const crnOff = new Map<string, number>();
  const sorted = [...nodes].sort((a, c) => (a.crn < c.crn ? -1 : a.crn > c.crn ? 1 : 0));
  const nodeOffs = sorted.map((n) => {
    const crn = b.createString(n.crn);
    crnOff.set(n.crn, crn);
    const type = str(n.type);
    const props = n.props.map(([k, v]) => Property.createProperty(b, str(k), k === "x" || k === "y" ? b.createString(v) : str(v)));
    const pv = Node.createPropertiesVector(b, props);
    Node.startNode(b);
    Node.addCrn(b, crn);
    Node.addType(b, type);
    if (n.cost !== undefined) Node.addCostUsdMo(b, n.cost);
    Node.addProperties(b, pv);
    return Node.endNode(b);
  });
  const edgeOffs = edges.map(([s, t, rel]) => {
    const so = shareCrns && crnOff.has(s) ? crnOff.get(s)! : b.createString(s);
    const to = shareCrns && crnOff.has(t) ? crnOff.get(t)! : b.createString(t);
    Edge.startEdge(b);
    Edge.addSourceCrn(b, so);
    Edge.addTargetCrn(b, to);
    Edge.addRelationship(b, rel);
    return Edge.endEdge(b);
  });
  const nv = Graph.createNodesVector(b, nodeOffs);
  const ev = Graph.createEdgesVector(b, edgeOffs);
  Graph.startGraph(b);
  Graph.addNodes(b, nv);
  Graph.addEdges(b, ev);
  Graph.addVersion(b, 1);
  const root = Graph.endGraph(b);
  Graph.finishGraphBuffer(b, root);
  return b.asUint8Array();
}

const A = "crn:svc:aws:eu-west-1:ec2:instance:111:i-1";
const B = "crn:svc:aws:eu-west-1:ec2:volume:111:vol-1";
const C = "crn:svc:gcp:europe-west1:compute:disk:p1:d-1";
const D = "crn:svc:kubernetes:c1:core:pod:ns:p-1";

const small: N[] = [
  { crn: B, type: "ec2:volume", cost: 4.5, props: [["x", "90"], ["y", "30.5"], ["cluster", "aws/111/eu-west-1"], ["waste", "true"]] },
  { crn: A, type: "ec2:instance", cost: 70, props: [["cluster", "aws/111/eu-west-1"], ["x", "30"], ["y", "-30.25"], ["waste", "false"]] },
  { crn: C, type: "compute:disk", props: [["x", "1e3"], ["y", "0"], ["cluster", "gcp/p1/europe-west1"], ["color", "blue"]] },
  { crn: D, type: "core:pod", props: [["x", "5"], ["y", "6"], ["provider", "kubernetes"]] },
];
const edges: [string, string, number][] = [
  [B, A, 0],
  [A, C, 6],
  [A, "crn:svc:aws:eu-west-1:ec2:instance:111:gone", 1],
];

describe("binary graph form", () => {
  for (const share of [true, false]) {
    it(`decodes positions, clusters, providers, waste and edges (CRN strings ${share ? "shared" : "not shared"})`, () => {
      const buf = buildGraph(small, edges, share);
      expect(isGraphBuffer(buf)).toBe(true);
      expect(nodeCount(buf)).toBe(4);
      const g = decodeGraph(buf, { totalNodes: 9, truncated: null });
      expect(g.source).toBe("binary");
      expect(g.count).toBe(4);
      // Nodes come sorted by CRN: A, B, C, D.
      expect([0, 1, 2, 3].map((i) => g.crn(i))).toEqual([A, B, C, D]);
      expect(Array.from(g.x)).toEqual([30, 90, 1000, 5]);
      expect(Array.from(g.y)).toEqual([-30.25, 30.5, 0, 6]);
      expect(g.providers[g.provider[0]!]).toBe("aws");
      expect(g.providers[g.provider[2]!]).toBe("gcp");
      expect(g.providers[g.provider[3]!]).toBe("kubernetes");
      expect(Array.from(g.waste)).toEqual([WASTE_NO, WASTE_YES, WASTE_UNKNOWN, WASTE_UNKNOWN]);
      expect(g.clusters.map((c) => [c.id, c.count])).toEqual([
        ["aws/111/eu-west-1", 2],
        ["gcp/p1/europe-west1", 1],
      ]);
      expect(g.cluster[3]).toBe(NO_CLUSTER);
      expect(Array.from(g.edges)).toEqual([1, 0, 0, 2]);
      expect(g.type(2)).toBe("compute:disk");
      expect(g.cost(0)).toBe(70);
      expect(g.cost(2)).toBe(0);
      expect(g.indexOf(C)).toBe(2);
      expect(g.indexOf("crn:svc:nope")).toBe(-1);
      expect([g.totalNodes, g.truncated]).toEqual([9, true]);
    });
  }

  it("refuses what is not the binary form", () => {
    expect(() => decodeGraph(new TextEncoder().encode('{"nodes":[]}'))).toThrow(GraphDecodeError);
    expect(isGraphBuffer(new Uint8Array(3))).toBe(false);
    expect(nodeCount(new Uint8Array(16))).toBe(0);
  });

  it("refuses a cut-off buffer with a clear error", () => {
    const buf = buildGraph(small, edges);
    for (const n of [12, 40, buf.length / 2]) expect(() => decodeGraph(buf.subarray(0, n))).toThrow(GraphDecodeError);
  });

  it("refuses a graph without positions", () => {
    const buf = buildGraph([{ crn: A, type: "t", props: [["cluster", "aws/1/r"]] }], []);
    expect(() => decodeGraph(buf)).toThrow(/no positions/);
  });

  it("parses decimals from bytes", () => {
    const e = new TextEncoder();
    const p = (s: string) => parseDecimal(e.encode(s), 0, e.encode(s).length);
    expect(p("30")).toBe(30);
    expect(p("-12.5")).toBe(-12.5);
    expect(p("0.125")).toBeCloseTo(0.125);
    expect(p("2.5e2")).toBe(250);
    expect(p("")).toBeNaN();
    expect(p("1x")).toBeNaN();
    expect(p("-")).toBeNaN();
  });

  it("decodes 100,000 nodes and their edges", () => {
    const n = 100_000;
    const nodes: N[] = [];
    const es: [string, string, number][] = [];
    for (let i = 0; i < n; i++) {
      const crn = `crn:svc:aws:eu-west-1:ec2:instance:${100 + (i % 7)}:i-${i.toString(16).padStart(8, "0")}`;
      nodes.push({ crn, type: "ec2:instance", cost: i % 50, props: [["x", String((i % 300) * 60 + 30)], ["y", String(Math.floor(i / 300) * 60 + 30)], ["cluster", `aws/${100 + (i % 7)}/eu-west-1`]] });
      if (i > 0) es.push([crn, nodes[i - 1]!.crn, 0]);
    }
    const buf = buildGraph(nodes, es);
    const t0 = performance.now();
    let g = decodeGraph(buf);
    const first = performance.now() - t0;
    const t1 = performance.now();
    g = decodeGraph(buf);
    const ms = performance.now() - t1;
    console.log(`first decode (cold code) ${first.toFixed(1)} ms`);
    console.log(`decoded ${g.count} nodes, ${g.edgeCount} edges, ${(buf.length / 1e6).toFixed(1)} MB in ${ms.toFixed(1)} ms`);
    expect(g.count).toBe(n);
    expect(g.edgeCount).toBe(n - 1);
    expect(g.clusters.length).toBe(7);
  }, 120_000);
});

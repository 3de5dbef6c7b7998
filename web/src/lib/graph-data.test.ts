import { describe, expect, it } from "vitest";
import { clustersFromNodes, fromLayoutJson, NO_CLUSTER, providerFromCrn, ringPosition, typeFromCrn, WASTE_NO, WASTE_UNKNOWN, WASTE_YES } from "./graph-data";

const A = "crn:svc:aws:eu-west-1:ec2:instance:111:i-1";
const B = "crn:svc:aws:eu-west-1:ec2:volume:111:vol-1";
const C = "crn:svc:gcp:europe-west1:compute:disk:p1:d-1";

const layout = {
  clusters: [
    { id: "aws/111/eu-west-1", provider: "aws", account: "111", region: "eu-west-1", node_count: 2, x: 0, y: 0, width: 120, height: 120 },
    { id: "gcp/p1/europe-west1", provider: "gcp", account: "p1", region: "europe-west1", node_count: 1, x: 240, y: 0, width: 60, height: 60 },
  ],
  nodes: [
    { cluster: "aws/111/eu-west-1", crn: A, provider: "aws", type: "ec2:instance", x: 30, y: 30 },
    { cluster: "aws/111/eu-west-1", crn: B, provider: "aws", type: "ec2:volume", x: 90, y: 30 },
    { cluster: "gcp/p1/europe-west1", crn: C, provider: "gcp", type: "compute:disk", x: 270, y: 30 },
  ],
  edges: [
    { source: B, target: A, type: "AttachedTo" as const },
    { source: B, target: "crn:svc:aws:eu-west-1:ec2:instance:111:not-drawn", type: "AttachedTo" as const },
  ],
  total_nodes: 10,
  truncated: true,
};

describe("JSON topology to arrays", () => {
  it("keeps positions, providers, clusters and the edges among drawn nodes", () => {
    const g = fromLayoutJson(layout);
    expect(g.count).toBe(3);
    expect(Array.from(g.x)).toEqual([30, 90, 270]);
    expect(Array.from(g.y)).toEqual([30, 30, 30]);
    expect(g.providers).toEqual(["aws", "gcp"]);
    expect(Array.from(g.provider)).toEqual([0, 0, 1]);
    expect(Array.from(g.cluster)).toEqual([0, 0, 1]);
    expect(Array.from(g.edges)).toEqual([1, 0]);
    expect(g.crn(2)).toBe(C);
    expect(g.type(1)).toBe("ec2:volume");
    expect(g.cost(0)).toBeNull();
    expect(g.indexOf(B)).toBe(1);
    expect(g.indexOf("crn:nope")).toBe(-1);
    expect([g.totalNodes, g.truncated, g.source]).toEqual([10, true, "json"]);
    expect(g.bounds()).toEqual({ minX: 0, minY: 0, maxX: 300, maxY: 60 });
  });

  it("takes waste verdicts from the flow graph", () => {
    const g = fromLayoutJson(layout);
    const matched = g.applyWaste([
      { id: A, data: { is_waste: true, cost_usd_mo: 1, state: "stopped" } },
      { id: C, data: { is_waste: false, cost_usd_mo: 1, state: "running" } },
      { id: "crn:svc:x", data: { is_waste: true, cost_usd_mo: 1, state: "" } },
    ]);
    expect(matched).toBe(2);
    expect(Array.from(g.waste)).toEqual([WASTE_YES, WASTE_UNKNOWN, WASTE_NO]);
    expect(g.wasteKnown()).toBe(2);
  });

  it("adds neighbours not drawn yet around a node, once", () => {
    const g = fromLayoutJson(layout);
    const D = "crn:svc:azure:westeurope:compute:vm:sub:vm-1";
    const added = g.addNodes([A, D, D], 0);
    expect(added).toEqual([3]);
    expect(g.count).toBe(4);
    expect(g.crn(3)).toBe(D);
    expect(g.indexOf(D)).toBe(3);
    expect(g.isAdded(3)).toBe(true);
    expect(g.providers[g.provider[3]!]).toBe("azure");
    expect(g.cluster[3]).toBe(NO_CLUSTER);
    expect(g.type(3)).toBe("compute:vm");
    expect(Math.hypot(g.x[3]! - 30, g.y[3]! - 30)).toBeCloseTo(45);
    expect(g.addNodes([D], 0)).toEqual([]);
  });

  it("searches CRNs, the exact one first", () => {
    const g = fromLayoutJson(layout);
    expect(g.search("EC2")).toEqual([0, 1]);
    expect(g.search(B)).toEqual([1]);
    expect(g.search("  ")).toEqual([]);
  });
});

describe("helpers", () => {
  it("reads provider and type from a CRN", () => {
    expect(providerFromCrn(A)).toBe("aws");
    expect(providerFromCrn("nonsense")).toBe("");
    expect(typeFromCrn(B)).toBe("ec2:volume");
  });

  it("puts ring slots apart", () => {
    const seen = new Set<string>();
    for (let k = 0; k < 30; k++) seen.add(ringPosition(k).map((v) => v.toFixed(3)).join(","));
    expect(seen.size).toBe(30);
  });

  it("computes cluster boxes from positions", () => {
    const c = clustersFromNodes(["aws/1/r", "gcp/2/s"], Uint32Array.of(0, 0, NO_CLUSTER), Float32Array.of(30, 90, 500), Float32Array.of(30, 90, 500), 3);
    expect(c[0]).toEqual({ id: "aws/1/r", provider: "aws", account: "1", region: "r", count: 2, x: 0, y: 0, width: 120, height: 120 });
    expect(c[1]!.count).toBe(0);
  });
});

describe("cluster boxes from the API", () => {
  it("replace the boxes computed from positions, by cluster id", () => {
    const g = fromLayoutJson(layout);
    g.useClusterBounds([{ id: "gcp/p1/europe-west1", provider: "gcp", account: "p1", region: "europe-west1", node_count: 7, x: 1, y: 2, width: 3, height: 4 }]);
    expect(g.clusters[1]).toEqual({ id: "gcp/p1/europe-west1", provider: "gcp", account: "p1", region: "europe-west1", count: 7, x: 1, y: 2, width: 3, height: 4 });
    expect(g.clusters[0]!.width).toBe(120);
  });
});

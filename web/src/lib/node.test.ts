import { describe, expect, it } from "vitest";
import {
  canonical,
  countChanges,
  type DriftReport,
  diffVersions,
  instantText,
  microsToSeconds,
  type Node,
  oldestFirst,
  parseInstant,
  terraformStatus,
  valueText,
  versionAt,
} from "./node";

function node(over: Partial<Node> = {}): Node {
  return {
    account: "123",
    cost_usd_mo: 7.2,
    creation_timestamp: 1695955572,
    crn: "crn:svc:aws:eu-central-1:ec2:volume:123:vol-1",
    is_waste: false,
    kind: "volume",
    phase: "",
    physical_id: "vol-1",
    properties: { size_gib: 160, attached_to: "i-1", nested: { a: 1, b: [1, 2] } },
    provider: "aws",
    reachability: "unknown",
    region: "eu-central-1",
    risk_score: 0,
    service: "ec2",
    state: "in-use",
    tags: { env: "prod", team: "search" },
    type: "ec2:volume",
    valid_from: 1_000_000_000_000,
    valid_to: 0,
    verdict: "",
    waste_reason: "",
    ...over,
  };
}

describe("version diff", () => {
  it("finds nothing between equal versions, whatever their bounds and key order", () => {
    const a = node({ valid_to: 2_000_000_000_000 });
    const b = node({ valid_from: 2_000_000_000_000, properties: { nested: { b: [1, 2], a: 1 }, attached_to: "i-1", size_gib: 160 } });
    expect(diffVersions(a, b)).toEqual([]);
  });

  it("lists changed fields, then properties and tags added, removed and changed", () => {
    const a = node();
    const b = node({
      state: "available",
      is_waste: true,
      waste_reason: "unattached",
      properties: { size_gib: 200, nested: { a: 1, b: [1, 2] }, last_attached_at: "2024-08-18T01:33:21Z" },
      tags: { env: "prod", owner: "frank" },
    });
    expect(diffVersions(a, b)).toEqual([
      { path: "is_waste", kind: "changed", before: false, after: true },
      { path: "state", kind: "changed", before: "in-use", after: "available" },
      { path: "waste_reason", kind: "changed", before: "", after: "unattached" },
      { path: "properties.attached_to", kind: "removed", before: "i-1" },
      { path: "properties.last_attached_at", kind: "added", after: "2024-08-18T01:33:21Z" },
      { path: "properties.size_gib", kind: "changed", before: 160, after: 200 },
      { path: "tags.owner", kind: "added", after: "frank" },
      { path: "tags.team", kind: "removed", before: "search" },
    ]);
    expect(countChanges(diffVersions(a, b))).toEqual({ added: 2, removed: 2, changed: 4 });
  });

  it("sees a change inside a nested property and a null that was a value", () => {
    const a = node({ properties: { nested: { a: 1 }, attached_to: "i-1" } });
    const b = node({ properties: { nested: { a: 2 }, attached_to: null } });
    expect(diffVersions(a, b).map((c) => [c.path, c.kind])).toEqual([
      ["properties.attached_to", "changed"],
      ["properties.nested", "changed"],
    ]);
  });

  it("is the reverse of itself the other way round", () => {
    const a = node();
    const b = node({ tags: { env: "dev" }, cost_usd_mo: 9 });
    const ab = diffVersions(a, b);
    const ba = diffVersions(b, a);
    expect(countChanges(ab)).toEqual({ added: 0, removed: 1, changed: 2 });
    expect(countChanges(ba)).toEqual({ added: 1, removed: 0, changed: 2 });
  });

  it("writes objects canonically", () => {
    expect(canonical({ b: 1, a: [null, "x"] })).toBe('{"a":[null,"x"],"b":1}');
    expect(valueText("x")).toBe("x");
    expect(valueText({ a: 1 })).toBe('{"a":1}');
    expect(valueText(null)).toBe("null");
  });
});

describe("versions through time", () => {
  const t1 = 1_700_000_000_000_000;
  const t2 = 1_700_000_100_000_000;
  const t3 = 1_700_000_200_000_000;
  const v1 = node({ valid_from: t1, valid_to: t2, state: "in-use" });
  const v2 = node({ valid_from: t2, valid_to: t3, state: "available" });
  const newest = [v2, v1];

  it("finds the version valid at an instant, its end exclusive", () => {
    expect(versionAt(newest, t1)).toBe(v1);
    expect(versionAt(newest, t2 - 1)).toBe(v1);
    expect(versionAt(newest, t2)).toBe(v2);
    expect(versionAt(newest, t1 - 1)).toBeNull();
    expect(versionAt(newest, t3)).toBeNull();
    const current = node({ valid_from: t3, valid_to: 0 });
    expect(versionAt([current, ...newest], t3 + 10 ** 12)).toBe(current);
  });

  it("orders versions oldest first", () => {
    expect(oldestFirst(newest)).toEqual([v1, v2]);
  });

  it("reads instants in UTC and writes them as RFC 3339", () => {
    expect(parseInstant("2023-11-14T22:13:20Z")).toBe(t1);
    expect(parseInstant("2023-11-14 22:13:20")).toBe(t1);
    expect(parseInstant("2023-11-14T23:13:20+01:00")).toBe(t1);
    expect(parseInstant("2023-11-14T22:13:20.5Z")).toBe(t1 + 500_000);
    expect(parseInstant("2023-11-14")).toBe(Date.UTC(2023, 10, 14) * 1000);
    expect(parseInstant("2023-02-30")).toBeNull();
    expect(parseInstant("2023-11-14T24:00:00Z")).toBeNull();
    expect(parseInstant("yesterday")).toBeNull();
    expect(parseInstant("")).toBeNull();
    expect(instantText(t1 + 999_999)).toBe("2023-11-14T22:13:20Z");
    expect(microsToSeconds(t1 + 999_999)).toBe(1_700_000_000);
  });
});

describe("terraform status", () => {
  const base: DriftReport = {
    configured: true,
    changed: [],
    gone: [],
    limit: 500,
    provenance: null,
    repository: null,
    states: [],
    totals: { attributes: 0, changed: 0, declared: 0, gone: 0, in_sync: 0, mapped: 0, outside_scans: 0, unmanaged: 0, unmapped: 0 },
    unmanaged: [],
  };
  const provenance = {
    address: "module.app.aws_ebs_volume.data[2]",
    author: "Alice",
    commit: "abc",
    crn: "crn:svc:aws:eu-west-1:ec2:volume:1:vol-1",
    email: "alice@example.com",
    end_line: 9,
    file: "main.tf",
    line: 3,
    managed: true,
    missing: null,
    state: "prod.tfstate",
    summary: "disks",
    time: 0,
  };

  it("says when no state is configured, whatever else the report holds", () => {
    expect(terraformStatus({ ...base, configured: false, provenance })).toEqual({ kind: "unconfigured" });
  });

  it("reads a declared resource as in sync, changed or gone", () => {
    expect(terraformStatus({ ...base, provenance })).toEqual({ kind: "in_sync", address: provenance.address });
    const attribute = { attribute: "size", property: "size_gib", declared: 100, live: 200 };
    const changed = { address: provenance.address, attributes: [attribute], crn: provenance.crn, state: "prod.tfstate", terraform_type: "aws_ebs_volume" };
    expect(terraformStatus({ ...base, provenance, changed: [changed] })).toEqual({ kind: "changed", address: provenance.address, attributes: [attribute] });
    const code_change = { diff: null, kind: "reduce_count" as const, removed_block: null, summary: "lower count" };
    const gone = { address: provenance.address, code_change, crn: provenance.crn, removed_by_svc: true, state: "prod.tfstate", terraform_type: "aws_ebs_volume" };
    expect(terraformStatus({ ...base, provenance, gone: [gone] })).toEqual({ kind: "gone", address: provenance.address, removedBySvc: true });
  });

  it("reads a resource no state declares as unmanaged", () => {
    expect(terraformStatus({ ...base, provenance: { ...provenance, managed: false, address: "" } })).toEqual({ kind: "unmanaged" });
  });
});

import { describe, expect, it } from "vitest";
import { toCsv } from "./csv";
import { explorerOfType, filterTop, filterTypes, TOP_CSV, topRows, TYPE_CSV, type LedgerType } from "./waste";

function line(type: string, provider: string, savings: number[]): LedgerType {
  return {
    type,
    provider,
    count: 10,
    waste_count: savings.length,
    optimize_count: 0,
    waste_usd_mo: savings.reduce((a, b) => a + b, 0),
    projected_savings_usd_mo: savings.reduce((a, b) => a + b, 0),
    top: savings.map((s, i) => ({
      crn: `crn:svc:${provider}:r:${type}:a:${type}-${i}`,
      is_waste: i % 2 === 0,
      projected_savings_usd_mo: s,
      reason: `reason, "quoted"`,
      risk_score: 50,
      rule: "rule",
      source: "builtin",
      suggested_action: "delete it",
    })),
  };
}

const types = [line("ec2:volume", "aws", [30, 10]), line("compute:disk", "gcp", [20])];

describe("the waste ledger", () => {
  it("lists every type's top resources, largest saving first", () => {
    const rows = topRows(types);
    expect(rows.map((r) => r.projected_savings_usd_mo)).toEqual([30, 20, 10]);
    expect(rows[1]?.type).toBe("compute:disk");
    expect(rows[1]?.provider).toBe("gcp");
  });

  it("filters types by name and resources by verdict", () => {
    expect(filterTypes(types, "DISK").map((t) => t.type)).toEqual(["compute:disk"]);
    expect(filterTypes(types, "  ")).toHaveLength(2);
    expect(filterTop(topRows(types), "waste").map((r) => r.projected_savings_usd_mo)).toEqual([30, 20]);
    expect(filterTop(topRows(types), "optimize").map((r) => r.projected_savings_usd_mo)).toEqual([10]);
  });

  it("exports the columns an operator reads, quoted", () => {
    const csv = toCsv(types, TYPE_CSV).split("\r\n");
    expect(csv[0]).toBe("type,provider,resources,waste_count,optimize_count,waste_usd_mo,projected_savings_usd_mo");
    expect(csv[1]).toBe("ec2:volume,aws,10,2,0,40,40");
    const top = toCsv(topRows(types), TOP_CSV).split("\r\n");
    expect(top[0]).toBe("crn,type,provider,verdict,projected_savings_usd_mo,risk_score,rule,source,reason,suggested_action");
    expect(top[1]).toBe('crn:svc:aws:r:ec2:volume:a:ec2:volume-0,ec2:volume,aws,waste,30,50,rule,builtin,"reason, ""quoted""",delete it');
  });

  it("links a type to the Explorer filtered by it", () => {
    expect(explorerOfType("ec2:volume")).toBe("#/explorer?type=ec2%3Avolume");
  });
});

import { describe, expect, it } from "vitest";
import { HISTORY_CSV, NODE_CSV, pct, signedMoney, sparkPoints, TYPE_CSV } from "./anomalies";
import { toCsv } from "./csv";
import { money } from "./format";

describe("anomalies", () => {
  it("reads changes with their sign", () => {
    expect(pct(null)).toBe("new");
    expect(pct(12.345)).toBe("+12.3%");
    expect(pct(-75)).toBe("-75.0%");
    expect(signedMoney(394, money)).toBe("+$394");
    expect(signedMoney(-5.5, money)).toBe("−$5.50");
    expect(signedMoney(0, money)).toBe("$0.00");
  });

  it("exports resource anomalies with a header and a row each", () => {
    const csv = toCsv(
      [
        {
          crn: "crn:svc:aws:r:ec2:volume:a:vol-1",
          type: "ec2:volume",
          provider: "aws",
          kind: "new",
          previous: 0,
          current: 394,
          change: 394,
          change_pct: null,
          direction: "up",
          z: 445.6,
          scan_seq: 2,
        },
      ],
      NODE_CSV,
    ).split("\r\n");
    expect(csv[0]).toBe("crn,type,provider,kind,previous_usd_mo,current_usd_mo,change_usd_mo,change_pct,z,scan_seq");
    expect(csv[1]).toBe("crn:svc:aws:r:ec2:volume:a:vol-1,ec2:volume,aws,new,0,394,394,,445.6,2");
    expect(TYPE_CSV.map((c) => c.header)).toContain("history_changes");
    expect(HISTORY_CSV.map((c) => c.header)[0]).toBe("type");
  });

  it("draws a line through the box, lowest at the bottom", () => {
    expect(sparkPoints([1, 3, 2], 10, 4)).toBe("0.0,4.0 5.0,0.0 10.0,2.0");
    expect(sparkPoints([5, 5], 10, 4)).toBe("0.0,4.0 10.0,4.0");
    expect(sparkPoints([], 10, 4)).toBe("");
  });
});

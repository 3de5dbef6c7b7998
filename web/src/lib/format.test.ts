import { describe, expect, it } from "vitest";
import { toCsv } from "./csv";
import { money, parseDuration, relative, rfc3339 } from "./format";

describe("format", () => {
  it("shows money with cents only under $100", () => {
    expect(money(1234.5)).toBe("$1,235");
    expect(money(12.345)).toBe("$12.35");
    expect(money(undefined)).toBe("–");
  });

  it("parses durations", () => {
    expect(parseDuration("7d")).toBe(604800);
    expect(parseDuration("90")).toBe(90);
    expect(parseDuration("2w")).toBe(1209600);
    expect(parseDuration("1y")).toBeNull();
    expect(parseDuration("")).toBeNull();
  });

  it("says times relative to now", () => {
    expect(relative(1000, 1000 + 120)).toBe("2 min ago");
    expect(relative(1000 + 7200, 1000)).toBe("in 2 h");
    expect(rfc3339(0)).toBe("1970-01-01T00:00:00Z");
  });
});

describe("csv", () => {
  it("quotes what needs quoting and defuses formulas", () => {
    const out = toCsv(
      [{ a: 'x,"y"', b: "=SUM(A1)", c: 3 }],
      [
        { header: "a", value: (r) => r.a },
        { header: "b", value: (r) => r.b },
        { header: "c", value: (r) => r.c },
      ],
    );
    expect(out).toBe('a,b,c\r\n"x,""y""",\'=SUM(A1),3\r\n');
  });
});

describe("shortCrn", () => {
  it("keeps service, kind and id", async () => {
    const { shortCrn } = await import("./format");
    expect(shortCrn("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0abc")).toBe("ec2:volume:vol-0abc");
    expect(shortCrn("crn:svc:aws:us-east-1:s3:bucket:1:a:b")).toBe("s3:bucket:a:b");
    expect(shortCrn("not-a-crn")).toBe("not-a-crn");
  });
});

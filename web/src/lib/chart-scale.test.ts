import { describe, expect, it } from "vitest";
import { areaPath, compactMoney, linePath, linePoints, niceMax, scale, stack, ticks } from "./chart-scale";

describe("niceMax", () => {
  it("rounds up to 1, 2, 2.5 or 5 times a power of ten", () => {
    expect(niceMax(3_363_500)).toBe(5_000_000);
    expect(niceMax(2_100)).toBe(2_500);
    expect(niceMax(1_900)).toBe(2_000);
    expect(niceMax(1_000)).toBe(1_000);
    expect(niceMax(0.3)).toBe(0.5);
    expect(niceMax(7)).toBe(10);
  });
  it("is 1 for nothing, negatives and non-numbers", () => {
    expect(niceMax(0)).toBe(1);
    expect(niceMax(-5)).toBe(1);
    expect(niceMax(NaN)).toBe(1);
  });
});

describe("ticks", () => {
  it("spaces count + 1 ticks from 0 to max", () => {
    expect(ticks(5_000_000, 4)).toEqual([0, 1_250_000, 2_500_000, 3_750_000, 5_000_000]);
    expect(ticks(0)).toEqual([0]);
  });
});

describe("scale", () => {
  it("maps 0..max onto 0..length and clamps", () => {
    expect(scale(50, 100, 300)).toBe(150);
    expect(scale(150, 100, 300)).toBe(300);
    expect(scale(-1, 100, 300)).toBe(0);
    expect(scale(5, 0, 300)).toBe(0);
  });
});

describe("stack", () => {
  it("puts parts end to end on the scale, negatives as zero", () => {
    const s = stack(
      [
        { key: "waste", value: 25 },
        { key: "rest", value: 75 },
        { key: "neg", value: -3 },
      ],
      200,
      400,
    );
    expect(s).toEqual([
      { key: "waste", start: 0, length: 50 },
      { key: "rest", start: 50, length: 150 },
      { key: "neg", start: 200, length: 0 },
    ]);
  });
});

describe("lines and areas", () => {
  it("spreads points over the width, the largest value at the top", () => {
    const p = linePoints([0, 50, 100], 200, 100, 100);
    expect(p).toEqual([
      [0, 100],
      [100, 50],
      [200, 0],
    ]);
    expect(linePath(p)).toBe("M0,100L100,50L200,0");
    expect(areaPath(p, 100)).toBe("M0,100L100,50L200,0L200,100L0,100Z");
  });
  it("puts a single point in the middle, and draws nothing for none", () => {
    expect(linePoints([10], 200, 100, 20)).toEqual([[100, 50]]);
    expect(linePath([])).toBe("");
    expect(areaPath([], 100)).toBe("");
  });
});

describe("compactMoney", () => {
  it("shortens with k, M and B", () => {
    expect(compactMoney(950)).toBe("$950");
    expect(compactMoney(12_345)).toBe("$12.3k");
    expect(compactMoney(3_363_500)).toBe("$3.36M");
    expect(compactMoney(250_000)).toBe("$250k");
    expect(compactMoney(2_000_000)).toBe("$2M");
    expect(compactMoney(-1_500)).toBe("-$1.5k");
  });
});

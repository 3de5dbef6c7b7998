import { describe, expect, it } from "vitest";
import { GridIndex } from "./graph-index";

function brute(xs: Float32Array, ys: Float32Array, x: number, y: number, r: number): number {
  let best = -1;
  let bd = r * r;
  for (let i = 0; i < xs.length; i++) {
    const d = (xs[i]! - x) ** 2 + (ys[i]! - y) ** 2;
    if (d <= bd && (best < 0 || d < bd)) {
      best = i;
      bd = d;
    }
  }
  return best;
}

describe("grid index", () => {
  it("picks the nearest node within the radius, as a full scan does", () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const n = 5000;
    const xs = new Float32Array(n);
    const ys = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      xs[i] = rand() * 10000 - 2000;
      ys[i] = rand() * 3000;
    }
    const g = new GridIndex(xs, ys, n);
    for (let k = 0; k < 500; k++) {
      const x = rand() * 12000 - 3000;
      const y = rand() * 4000 - 500;
      const r = rand() * 200;
      const got = g.nearest(x, y, r);
      const want = brute(xs, ys, x, y, r);
      if (want < 0) expect(got).toBe(-1);
      else expect((xs[got]! - x) ** 2 + (ys[got]! - y) ** 2).toBeCloseTo((xs[want]! - x) ** 2 + (ys[want]! - y) ** 2);
    }
  });

  it("finds nothing far from every node and handles no nodes", () => {
    const g = new GridIndex(Float32Array.of(0, 60), Float32Array.of(0, 0), 2);
    expect(g.nearest(30.5, 0, 40)).toBe(1);
    expect(g.nearest(29.5, 0, 40)).toBe(0);
    expect(g.nearest(30, 100, 10)).toBe(-1);
    expect(new GridIndex(new Float32Array(0), new Float32Array(0), 0).nearest(0, 0, 100)).toBe(-1);
  });

  it("indexes only the first `count` nodes", () => {
    const g = new GridIndex(Float32Array.of(0, 10), Float32Array.of(0, 0), 1);
    expect(g.nearest(10, 0, 1)).toBe(-1);
  });

  it("counts the nodes in a rectangle", () => {
    const xs = new Float32Array(100);
    const ys = new Float32Array(100);
    for (let i = 0; i < 100; i++) {
      xs[i] = (i % 10) * 60;
      ys[i] = Math.floor(i / 10) * 60;
    }
    const g = new GridIndex(xs, ys, 100, 1);
    expect(g.countIn(-1, -1, 1000, 1000)).toBe(100);
    expect(g.countIn(0, 0, 120, 60)).toBe(6);
    expect(g.countIn(1000, 1000, 2000, 2000)).toBe(0);
  });
});

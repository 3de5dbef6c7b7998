import { describe, expect, it } from "vitest";
import { clipTransform, fitBounds, MAX_SCALE, overlapFraction, panBy, screenToWorld, sheetCovers, sheetFor, sheetPlacement, visibleBounds, worldToScreen, zoomAt, type ViewState } from "./graph-view";

const v: ViewState = { cx: 100, cy: 50, scale: 2, width: 800, height: 600 };

describe("graph view transform", () => {
  it("maps the centre to the middle of the canvas and back", () => {
    expect(worldToScreen(v, 100, 50)).toEqual([400, 300]);
    expect(worldToScreen(v, 110, 40)).toEqual([420, 280]);
    expect(screenToWorld(v, 420, 280)).toEqual([110, 40]);
  });

  it("pans the picture with the pointer", () => {
    const p = panBy(v, 20, -10);
    // What was at (400, 300) is now at (420, 290).
    const [sx, sy] = worldToScreen(p, 100, 50);
    expect(sx).toBeCloseTo(420);
    expect(sy).toBeCloseTo(290);
  });

  it("zooms about the pointer, keeping the point under it in place", () => {
    const z = zoomAt(v, 3, 100, 500);
    const before = screenToWorld(v, 100, 500);
    const after = screenToWorld(z, 100, 500);
    expect(z.scale).toBe(6);
    expect(after[0]).toBeCloseTo(before[0]);
    expect(after[1]).toBeCloseTo(before[1]);
    expect(zoomAt(v, 1e9, 0, 0).scale).toBe(MAX_SCALE);
  });

  it("fits bounds inside the canvas with a margin", () => {
    const f = fitBounds({ minX: 0, minY: 0, maxX: 1000, maxY: 200 }, 800, 600, 50);
    expect(f.scale).toBeCloseTo(0.7);
    expect([f.cx, f.cy]).toEqual([500, 100]);
    const b = visibleBounds(f);
    expect(b.minX).toBeLessThanOrEqual(0);
    expect(b.maxX).toBeGreaterThanOrEqual(1000);
  });

  it("measures how much of a rectangle is on screen", () => {
    expect(overlapFraction({ minX: 0, minY: 0, maxX: 10, maxY: 10 }, { minX: 5, minY: 0, maxX: 15, maxY: 10 })).toBeCloseTo(0.5);
    expect(overlapFraction({ minX: 0, minY: 0, maxX: 10, maxY: 10 }, { minX: 20, minY: 20, maxX: 30, maxY: 30 })).toBe(0);
  });

  it("gives clip-space uniforms that agree with the screen mapping", () => {
    const t = clipTransform(v);
    const [sx, sy] = worldToScreen(v, 130, 80);
    const clipX = (130 - t.cx) * t.kx;
    const clipY = (80 - t.cy) * t.ky;
    expect(clipX).toBeCloseTo((sx / v.width) * 2 - 1);
    expect(clipY).toBeCloseTo(1 - (sy / v.height) * 2);
  });
});

describe("canvas sheet", () => {
  it("adds half the stage each side, within the size limit", () => {
    expect(sheetFor(v, 1, 4096)).toEqual({ ...v, width: 1600, height: 1200 });
    expect(sheetFor(v, 2, 2000)).toMatchObject({ width: 1000, height: 1000 });
    // Never smaller than the stage.
    expect(sheetFor(v, 2, 1000)).toMatchObject({ width: 800, height: 600 });
  });

  it("covers the stage until the pan leaves the margin or the zoom changes", () => {
    const s = sheetFor(v, 1, 4096);
    expect(sheetCovers(s, v)).toBe(true);
    expect(sheetCovers(s, panBy(v, 400, -300))).toBe(true);
    expect(sheetCovers(s, panBy(v, 401, 0))).toBe(false);
    expect(sheetCovers(s, zoomAt(v, 1.1, 0, 0))).toBe(false);
  });

  it("places the sheet so that its picture lines up with the view", () => {
    const s = sheetFor(v, 1, 4096);
    expect(sheetPlacement(s, v)).toEqual({ left: -400, top: -300, k: 1 });
    const moved = panBy(v, 25, -10);
    expect(sheetPlacement(s, moved)).toEqual({ left: -375, top: -310, k: 1 });
    // A layout point drawn at sheet pixel (px, py) shows at left + px * k.
    const z = zoomAt(v, 2, 100, 100);
    const p = sheetPlacement(s, z);
    const [wx, wy] = [130, 70];
    const [px, py] = worldToScreen(s, wx, wy);
    const [sx, sy] = worldToScreen(z, wx, wy);
    expect(p.left + px * p.k).toBeCloseTo(sx);
    expect(p.top + py * p.k).toBeCloseTo(sy);
  });
});

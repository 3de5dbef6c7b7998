// The graph view's transform between layout units (the API's x, y) and the
// canvas, in CSS pixels: screen = (world - center) * scale + size / 2.
// Pure functions, so panning and zooming can be tested without a browser.

export interface ViewState {
  /** The layout point at the middle of the canvas. */
  cx: number;
  cy: number;
  /** CSS pixels per layout unit. */
  scale: number;
  /** Canvas size in CSS pixels. */
  width: number;
  height: number;
}

export interface Bounds {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** Zoom limits, in CSS pixels per layout unit. */
export const MIN_SCALE = 1e-4;
export const MAX_SCALE = 8;

export function clampScale(s: number): number {
  if (!Number.isFinite(s)) return 1;
  return Math.min(MAX_SCALE, Math.max(MIN_SCALE, s));
}

export function worldToScreen(v: ViewState, x: number, y: number): [number, number] {
  return [(x - v.cx) * v.scale + v.width / 2, (y - v.cy) * v.scale + v.height / 2];
}

export function screenToWorld(v: ViewState, sx: number, sy: number): [number, number] {
  return [(sx - v.width / 2) / v.scale + v.cx, (sy - v.height / 2) / v.scale + v.cy];
}

/** Moves the picture by (dx, dy) screen pixels (a drag to the right shows what was left). */
export function panBy(v: ViewState, dx: number, dy: number): ViewState {
  return { ...v, cx: v.cx - dx / v.scale, cy: v.cy - dy / v.scale };
}

/** Zooms by `factor` keeping the layout point under (sx, sy) where it is. */
export function zoomAt(v: ViewState, factor: number, sx: number, sy: number): ViewState {
  const scale = clampScale(v.scale * factor);
  const [wx, wy] = screenToWorld(v, sx, sy);
  // Solve (wx - cx') * scale + width / 2 = sx for cx'.
  return { ...v, scale, cx: wx - (sx - v.width / 2) / scale, cy: wy - (sy - v.height / 2) / scale };
}

/** The view that shows `b` whole with `margin` pixels around it. */
export function fitBounds(b: Bounds, width: number, height: number, margin = 24): ViewState {
  const w = Math.max(b.maxX - b.minX, 1);
  const h = Math.max(b.maxY - b.minY, 1);
  const scale = clampScale(Math.min(Math.max(width - 2 * margin, 1) / w, Math.max(height - 2 * margin, 1) / h));
  return { cx: (b.minX + b.maxX) / 2, cy: (b.minY + b.maxY) / 2, scale, width, height };
}

/** The layout rectangle the canvas shows. */
export function visibleBounds(v: ViewState): Bounds {
  const [minX, minY] = screenToWorld(v, 0, 0);
  const [maxX, maxY] = screenToWorld(v, v.width, v.height);
  return { minX, minY, maxX, maxY };
}

/** The part of `inner`'s area that lies inside `outer` (0 to 1). */
export function overlapFraction(outer: Bounds, inner: Bounds): number {
  const iw = inner.maxX - inner.minX;
  const ih = inner.maxY - inner.minY;
  if (iw <= 0 || ih <= 0) return 1;
  const w = Math.max(0, Math.min(outer.maxX, inner.maxX) - Math.max(outer.minX, inner.minX));
  const h = Math.max(0, Math.min(outer.maxY, inner.maxY) - Math.max(outer.minY, inner.minY));
  return (w * h) / (iw * ih);
}

/**
 * The uniforms that map layout units to clip space for WebGL: clip =
 * (world - center) * k * (1, -1) where k = 2 * scale / size.
 */
export function clipTransform(v: ViewState): { cx: number; cy: number; kx: number; ky: number } {
  return { cx: v.cx, cy: v.cy, kx: (2 * v.scale) / Math.max(v.width, 1), ky: (-2 * v.scale) / Math.max(v.height, 1) };
}

/**
 * The view drawn on the canvas sheet: the stage's view with a margin of
 * half the stage each side (within `maxSide` device pixels), so that
 * panning moves the sheet rather than drawing it again.
 */
export function sheetFor(v: ViewState, dpr: number, maxSide: number): ViewState {
  const side = (n: number) => Math.max(n, Math.min(2 * n, Math.floor(maxSide / Math.max(dpr, 1e-6))));
  return { cx: v.cx, cy: v.cy, scale: v.scale, width: side(v.width), height: side(v.height) };
}

/** Whether the sheet, at the view's zoom, holds everything the stage shows. */
export function sheetCovers(sheet: ViewState, v: ViewState): boolean {
  if (sheet.scale !== v.scale) return false;
  const dx = (sheet.cx - v.cx) * v.scale;
  const dy = (sheet.cy - v.cy) * v.scale;
  return Math.abs(dx) <= (sheet.width - v.width) / 2 + 1e-6 && Math.abs(dy) <= (sheet.height - v.height) / 2 + 1e-6;
}

/**
 * Where the sheet goes on the stage for view `v`: its top-left corner in
 * stage pixels and its scale (1 unless the zoom changed since it was drawn).
 */
export function sheetPlacement(sheet: ViewState, v: ViewState): { left: number; top: number; k: number } {
  const [left, top] = worldToScreen(v, sheet.cx - sheet.width / 2 / sheet.scale, sheet.cy - sheet.height / 2 / sheet.scale);
  return { left, top, k: v.scale / sheet.scale };
}

// A uniform grid over node positions, for picking the node under the
// pointer without looking at every node: each cell lists the nodes in it
// (compressed rows: `start[c]..start[c+1]` in `items`).

export class GridIndex {
  readonly minX: number;
  readonly minY: number;
  readonly cell: number;
  readonly cols: number;
  readonly rows: number;
  private readonly start: Uint32Array;
  private readonly items: Uint32Array;

  /**
   * Indexes the first `count` points of (xs, ys). `perCell` is the average
   * number of nodes a cell should hold.
   */
  constructor(
    private readonly xs: Float32Array,
    private readonly ys: Float32Array,
    readonly count: number,
    perCell = 4,
  ) {
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let i = 0; i < count; i++) {
      const x = xs[i]!;
      const y = ys[i]!;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    if (count === 0) {
      minX = minY = 0;
      maxX = maxY = 1;
    }
    const w = Math.max(maxX - minX, 1e-6);
    const h = Math.max(maxY - minY, 1e-6);
    const cells = Math.max(1, Math.min(1 << 22, Math.ceil(count / perCell)));
    // Square cells covering the bounds with about `cells` cells.
    let cell = Math.sqrt((w * h) / cells);
    if (!(cell > 0)) cell = Math.max(w, h);
    cell = Math.max(cell, Math.max(w, h) / 4096);
    this.minX = minX;
    this.minY = minY;
    this.cell = cell;
    this.cols = Math.max(1, Math.floor(w / cell) + 1);
    this.rows = Math.max(1, Math.floor(h / cell) + 1);
    const n = this.cols * this.rows;
    const start = new Uint32Array(n + 1);
    const cellOf = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      const c = this.cellAt(xs[i]!, ys[i]!);
      cellOf[i] = c;
      start[c + 1]!++;
    }
    for (let c = 0; c < n; c++) start[c + 1]! += start[c]!;
    const fill = start.slice(0, n);
    const items = new Uint32Array(count);
    for (let i = 0; i < count; i++) items[fill[cellOf[i]!]!++] = i;
    this.start = start;
    this.items = items;
  }

  private col(x: number): number {
    return Math.min(this.cols - 1, Math.max(0, Math.floor((x - this.minX) / this.cell)));
  }

  private row(y: number): number {
    return Math.min(this.rows - 1, Math.max(0, Math.floor((y - this.minY) / this.cell)));
  }

  private cellAt(x: number, y: number): number {
    return this.row(y) * this.cols + this.col(x);
  }

  /** The node nearest (x, y) within `radius` (layout units), or -1. */
  nearest(x: number, y: number, radius: number): number {
    if (this.count === 0 || !(radius >= 0)) return -1;
    const c0 = this.col(x - radius);
    const c1 = this.col(x + radius);
    const r0 = this.row(y - radius);
    const r1 = this.row(y + radius);
    let best = -1;
    let bestD = radius * radius;
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const cell = r * this.cols + c;
        for (let k = this.start[cell]!, end = this.start[cell + 1]!; k < end; k++) {
          const i = this.items[k]!;
          const dx = this.xs[i]! - x;
          const dy = this.ys[i]! - y;
          const d = dx * dx + dy * dy;
          if (d <= bestD && (best < 0 || d < bestD || i < best)) {
            best = i;
            bestD = d;
          }
        }
      }
    }
    return best;
  }

  /** How many nodes lie in the rectangle (cells it touches, then exact). */
  countIn(minX: number, minY: number, maxX: number, maxY: number): number {
    if (this.count === 0) return 0;
    const c0 = this.col(minX);
    const c1 = this.col(maxX);
    const r0 = this.row(minY);
    const r1 = this.row(maxY);
    let n = 0;
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const cell = r * this.cols + c;
        const inner = c > c0 && c < c1 && r > r0 && r < r1;
        for (let k = this.start[cell]!, end = this.start[cell + 1]!; k < end; k++) {
          if (inner) {
            n++;
            continue;
          }
          const i = this.items[k]!;
          const x = this.xs[i]!;
          const y = this.ys[i]!;
          if (x >= minX && x <= maxX && y >= minY && y <= maxY) n++;
        }
      }
    }
    return n;
  }
}

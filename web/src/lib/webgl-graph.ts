// Draws the graph with WebGL by hand: nodes as round points (gl.POINTS),
// edges as lines indexed into the same position buffers, and a small
// second pass for the selected node and its neighbourhood. Nothing here
// loops: the view asks for a frame when something changed.
//
// The canvas is larger than what shows of it (the view moves it with a CSS
// transform while panning, see views/graph.tsx), so a frame here is drawn
// only when the zoom, the data or the selection changed, or the pan left
// the margin.
import { clipTransform, type ViewState } from "./graph-view";
import { HIGHLIGHT, SELECTED, type Rgb } from "./graph-style";

export class WebGLUnavailable extends Error {}

type GL = WebGLRenderingContext | WebGL2RenderingContext;

const POINT_VS = `
attribute float a_x;
attribute float a_y;
attribute vec4 a_color;
uniform vec2 u_center;
uniform vec2 u_k;
uniform float u_size;
uniform vec4 u_tint;
varying vec4 v_color;
void main() {
  gl_Position = vec4((a_x - u_center.x) * u_k.x, (a_y - u_center.y) * u_k.y, 0.0, 1.0);
  gl_PointSize = u_size;
  v_color = mix(a_color, u_tint, u_tint.a);
  v_color.a = 1.0;
}`;

const POINT_FS = `
precision mediump float;
uniform float u_round;
varying vec4 v_color;
void main() {
  if (u_round > 0.5) {
    vec2 c = gl_PointCoord - vec2(0.5);
    if (dot(c, c) > 0.25) discard;
  }
  gl_FragColor = v_color;
}`;

const LINE_VS = `
attribute float a_x;
attribute float a_y;
uniform vec2 u_center;
uniform vec2 u_k;
void main() {
  gl_Position = vec4((a_x - u_center.x) * u_k.x, (a_y - u_center.y) * u_k.y, 0.0, 1.0);
}`;

const LINE_FS = `
precision mediump float;
uniform vec4 u_color;
void main() {
  gl_FragColor = u_color;
}`;

function compile(gl: GL, type: number, src: string): WebGLShader {
  const s = gl.createShader(type);
  if (!s) throw new WebGLUnavailable("cannot create a shader");
  gl.shaderSource(s, src);
  gl.compileShader(s);
  if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new WebGLUnavailable(`shader: ${gl.getShaderInfoLog(s) ?? "does not compile"}`);
  return s;
}

interface Program {
  p: WebGLProgram;
  attr: Record<string, number>;
  uni: Record<string, WebGLUniformLocation | null>;
}

function program(gl: GL, vs: string, fs: string, attrs: string[], unis: string[]): Program {
  const p = gl.createProgram();
  if (!p) throw new WebGLUnavailable("cannot create a program");
  gl.attachShader(p, compile(gl, gl.VERTEX_SHADER, vs));
  gl.attachShader(p, compile(gl, gl.FRAGMENT_SHADER, fs));
  gl.linkProgram(p);
  if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new WebGLUnavailable(`program: ${gl.getProgramInfoLog(p) ?? "does not link"}`);
  const attr: Record<string, number> = {};
  for (const a of attrs) attr[a] = gl.getAttribLocation(p, a);
  const uni: Record<string, WebGLUniformLocation | null> = {};
  for (const u of unis) uni[u] = gl.getUniformLocation(p, u);
  return { p, attr, uni };
}

export interface DrawOptions {
  /** Node diameter in CSS pixels. */
  pointSize: number;
  /** Draw the edges (they cost the most when many are on screen). */
  edges: boolean;
  edgeAlpha: number;
}

export class GraphRenderer {
  private readonly gl: GL;
  private readonly points: Program;
  private readonly lines: Program;
  /** Largest canvas side, in device pixels. */
  readonly maxSize: number;
  private readonly bx: WebGLBuffer;
  private readonly by: WebGLBuffer;
  private readonly bc: WebGLBuffer;
  private readonly be: WebGLBuffer;
  private readonly bh: WebGLBuffer;
  private readonly bhe: WebGLBuffer;
  private readonly brx: WebGLBuffer;
  private readonly bry: WebGLBuffer;
  private boxVertices = 0;
  private readonly uintIndices: boolean;
  private count = 0;
  private edgeIndices = 0;
  private highlightCount = 0;
  private highlightEdges = 0;
  private selectedAt = -1;
  readonly webgl2: boolean;
  lost = false;

  constructor(private readonly canvas: HTMLCanvasElement) {
    const attrs: WebGLContextAttributes = { antialias: false, alpha: false, depth: false, stencil: false, preserveDrawingBuffer: false, powerPreference: "high-performance" };
    let gl: GL | null = canvas.getContext("webgl2", attrs);
    this.webgl2 = !!gl;
    if (!gl) gl = canvas.getContext("webgl", attrs) as WebGLRenderingContext | null;
    if (!gl) throw new WebGLUnavailable("this browser offers no WebGL context");
    this.gl = gl;
    this.uintIndices = this.webgl2 || !!gl.getExtension("OES_element_index_uint");
    this.points = program(gl, POINT_VS, POINT_FS, ["a_x", "a_y", "a_color"], ["u_center", "u_k", "u_size", "u_tint", "u_round"]);
    this.lines = program(gl, LINE_VS, LINE_FS, ["a_x", "a_y"], ["u_center", "u_k", "u_color"]);
    const dims = gl.getParameter(gl.MAX_VIEWPORT_DIMS) as Int32Array | null;
    this.maxSize = Math.min(4096, dims?.[0] ?? 4096, dims?.[1] ?? 4096);
    const buf = () => {
      const b = gl.createBuffer();
      if (!b) throw new WebGLUnavailable("cannot create a buffer");
      return b;
    };
    this.bx = buf();
    this.by = buf();
    this.bc = buf();
    this.be = buf();
    this.bh = buf();
    this.bhe = buf();
    this.brx = buf();
    this.bry = buf();
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
  }

  /** Whether edges can be drawn (32-bit indices are needed past 65,535 nodes). */
  canDrawEdges(count: number): boolean {
    return this.uintIndices || count <= 65535;
  }

  /** Uploads positions (first `count` of each) and the edge index pairs. */
  setGeometry(x: Float32Array, y: Float32Array, count: number, edges: Uint32Array): void {
    const gl = this.gl;
    this.count = count;
    gl.bindBuffer(gl.ARRAY_BUFFER, this.bx);
    gl.bufferData(gl.ARRAY_BUFFER, x.subarray(0, count), gl.STATIC_DRAW);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.by);
    gl.bufferData(gl.ARRAY_BUFFER, y.subarray(0, count), gl.STATIC_DRAW);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.be);
    if (this.canDrawEdges(count)) {
      gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, this.uintIndices ? edges : Uint16Array.from(edges), gl.STATIC_DRAW);
      this.edgeIndices = edges.length;
    } else {
      this.edgeIndices = 0;
    }
  }

  /** Outlines of the clusters (layout rectangles). */
  setBoxes(boxes: readonly { x: number; y: number; width: number; height: number }[]): void {
    const gl = this.gl;
    const xs = new Float32Array(boxes.length * 8);
    const ys = new Float32Array(boxes.length * 8);
    boxes.forEach((b, k) => {
      const x0 = b.x;
      const y0 = b.y;
      const x1 = b.x + b.width;
      const y1 = b.y + b.height;
      xs.set([x0, x1, x1, x1, x1, x0, x0, x0], k * 8);
      ys.set([y0, y0, y0, y1, y1, y1, y1, y0], k * 8);
    });
    gl.bindBuffer(gl.ARRAY_BUFFER, this.brx);
    gl.bufferData(gl.ARRAY_BUFFER, xs, gl.STATIC_DRAW);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.bry);
    gl.bufferData(gl.ARRAY_BUFFER, ys, gl.STATIC_DRAW);
    this.boxVertices = xs.length;
  }

  /** RGBA bytes per node. */
  setColors(rgba: Uint8Array): void {
    const gl = this.gl;
    gl.bindBuffer(gl.ARRAY_BUFFER, this.bc);
    gl.bufferData(gl.ARRAY_BUFFER, rgba, gl.STATIC_DRAW);
  }

  /**
   * The selected node (-1 for none), the nodes drawn over it (its
   * neighbourhood), and the edges between them as index pairs.
   */
  setHighlight(selected: number, neighbours: readonly number[], edgePairs: readonly number[]): void {
    const gl = this.gl;
    const idx = [...neighbours.filter((i) => i !== selected && i < this.count)];
    this.selectedAt = selected >= 0 && selected < this.count ? idx.length : -1;
    if (this.selectedAt >= 0) idx.push(selected);
    const pairs = edgePairs.filter((_, k) => edgePairs[k - (k % 2)]! < this.count && edgePairs[k - (k % 2) + 1]! < this.count);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.bh);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, this.uintIndices ? Uint32Array.from(idx) : Uint16Array.from(idx), gl.DYNAMIC_DRAW);
    this.highlightCount = idx.length;
    const canEdges = this.canDrawEdges(this.count);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.bhe);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, this.uintIndices ? Uint32Array.from(pairs) : Uint16Array.from(canEdges ? pairs : []), gl.DYNAMIC_DRAW);
    this.highlightEdges = canEdges ? pairs.length : 0;
  }

  private bindPositions(p: Program): void {
    const gl = this.gl;
    gl.bindBuffer(gl.ARRAY_BUFFER, this.bx);
    gl.enableVertexAttribArray(p.attr.a_x!);
    gl.vertexAttribPointer(p.attr.a_x!, 1, gl.FLOAT, false, 0, 0);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.by);
    gl.enableVertexAttribArray(p.attr.a_y!);
    gl.vertexAttribPointer(p.attr.a_y!, 1, gl.FLOAT, false, 0, 0);
  }

  private lineColor(c: Rgb, alpha: number): void {
    this.gl.uniform4f(this.lines.uni.u_color!, c[0] / 255, c[1] / 255, c[2] / 255, alpha);
  }

  /** Draws the whole canvas for `view`; returns the CPU time it took, in milliseconds. */
  draw(view: ViewState, opts: DrawOptions): number {
    const t0 = performance.now();
    const gl = this.gl;
    if (this.lost || gl.isContextLost()) return 0;
    const dpr = this.canvas.width / Math.max(view.width, 1);
    gl.viewport(0, 0, this.canvas.width, this.canvas.height);
    gl.clearColor(1, 1, 1, 1);
    gl.clear(gl.COLOR_BUFFER_BIT);
    this.drawScene(view, opts, dpr);
    this.drawHighlight(view, opts, dpr);
    return performance.now() - t0;
  }

  /** Edges, then nodes. */
  private drawScene(view: ViewState, opts: DrawOptions, dpr: number): void {
    const gl = this.gl;
    const t = clipTransform(view);
    const indexType = this.uintIndices ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT;
    const l = this.lines;
    gl.useProgram(l.p);
    gl.uniform2f(l.uni.u_center!, t.cx, t.cy);
    gl.uniform2f(l.uni.u_k!, t.kx, t.ky);
    if (this.boxVertices > 0) {
      gl.bindBuffer(gl.ARRAY_BUFFER, this.brx);
      gl.enableVertexAttribArray(l.attr.a_x!);
      gl.vertexAttribPointer(l.attr.a_x!, 1, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ARRAY_BUFFER, this.bry);
      gl.enableVertexAttribArray(l.attr.a_y!);
      gl.vertexAttribPointer(l.attr.a_y!, 1, gl.FLOAT, false, 0, 0);
      this.lineColor([0x57, 0x60, 0x6a], 0.3);
      gl.drawArrays(gl.LINES, 0, this.boxVertices);
    }
    if (opts.edges && this.edgeIndices > 0) {
      this.bindPositions(l);
      this.lineColor([0x64, 0x74, 0x8b], opts.edgeAlpha);
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.be);
      gl.drawElements(gl.LINES, this.edgeIndices, indexType, 0);
    }
    const p = this.points;
    gl.useProgram(p.p);
    gl.uniform2f(p.uni.u_center!, t.cx, t.cy);
    gl.uniform2f(p.uni.u_k!, t.kx, t.ky);
    this.bindPositions(p);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.bc);
    gl.enableVertexAttribArray(p.attr.a_color!);
    gl.vertexAttribPointer(p.attr.a_color!, 4, gl.UNSIGNED_BYTE, true, 0, 0);
    const size = Math.max(1, opts.pointSize * dpr);
    gl.uniform1f(p.uni.u_size!, size);
    gl.uniform1f(p.uni.u_round!, size >= 5 ? 1 : 0);
    gl.uniform4f(p.uni.u_tint!, 0, 0, 0, 0);
    gl.drawArrays(gl.POINTS, 0, this.count);
    gl.disableVertexAttribArray(p.attr.a_color!);
  }

  /** The neighbourhood's edges and nodes, then the selected node, over the scene. */
  private drawHighlight(view: ViewState, opts: DrawOptions, dpr: number): void {
    if (this.highlightCount === 0 && this.highlightEdges === 0) return;
    const gl = this.gl;
    const t = clipTransform(view);
    const indexType = this.uintIndices ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT;
    const indexBytes = this.uintIndices ? 4 : 2;
    if (this.highlightEdges > 0) {
      const l = this.lines;
      gl.useProgram(l.p);
      gl.uniform2f(l.uni.u_center!, t.cx, t.cy);
      gl.uniform2f(l.uni.u_k!, t.kx, t.ky);
      this.bindPositions(l);
      this.lineColor(HIGHLIGHT, 0.9);
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.bhe);
      gl.drawElements(gl.LINES, this.highlightEdges, indexType, 0);
    }
    if (this.highlightCount === 0) return;
    const p = this.points;
    gl.useProgram(p.p);
    gl.uniform2f(p.uni.u_center!, t.cx, t.cy);
    gl.uniform2f(p.uni.u_k!, t.kx, t.ky);
    this.bindPositions(p);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.bc);
    gl.enableVertexAttribArray(p.attr.a_color!);
    gl.vertexAttribPointer(p.attr.a_color!, 4, gl.UNSIGNED_BYTE, true, 0, 0);
    const size = Math.max(1, opts.pointSize * dpr);
    // The neighbourhood: a blue ring (a larger point) under a point of the
    // node's own colour; the selected node: dark, white, then its colour.
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.bh);
    const hsize = Math.max(size + 4 * dpr, 8 * dpr);
    gl.uniform1f(p.uni.u_round!, 1);
    const neighbours = this.selectedAt >= 0 ? this.selectedAt : this.highlightCount;
    if (neighbours > 0) {
      gl.uniform1f(p.uni.u_size!, hsize);
      gl.uniform4f(p.uni.u_tint!, HIGHLIGHT[0] / 255, HIGHLIGHT[1] / 255, HIGHLIGHT[2] / 255, 1);
      gl.drawElements(gl.POINTS, neighbours, indexType, 0);
      gl.uniform1f(p.uni.u_size!, hsize - 3 * dpr);
      gl.uniform4f(p.uni.u_tint!, 0, 0, 0, 0);
      gl.drawElements(gl.POINTS, neighbours, indexType, 0);
    }
    if (this.selectedAt >= 0) {
      const s = hsize + 4 * dpr;
      gl.uniform1f(p.uni.u_size!, s);
      gl.uniform4f(p.uni.u_tint!, SELECTED[0] / 255, SELECTED[1] / 255, SELECTED[2] / 255, 1);
      gl.drawElements(gl.POINTS, 1, indexType, this.selectedAt * indexBytes);
      gl.uniform1f(p.uni.u_size!, s - 4 * dpr);
      gl.uniform4f(p.uni.u_tint!, 1, 1, 1, 1);
      gl.drawElements(gl.POINTS, 1, indexType, this.selectedAt * indexBytes);
      gl.uniform1f(p.uni.u_size!, s - 7 * dpr);
      gl.uniform4f(p.uni.u_tint!, 0, 0, 0, 0);
      gl.drawElements(gl.POINTS, 1, indexType, this.selectedAt * indexBytes);
    }
    gl.disableVertexAttribArray(p.attr.a_color!);
  }

  dispose(): void {
    const gl = this.gl;
    for (const b of [this.bx, this.by, this.bc, this.be, this.bh, this.bhe, this.brx, this.bry]) gl.deleteBuffer(b);
    gl.deleteProgram(this.points.p);
    gl.deleteProgram(this.lines.p);
  }
}

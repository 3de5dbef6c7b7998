// The Graph view (SPEC 4.4: `/api/v1/graph/topology` with positions and
// clusters): the whole laid-out graph drawn with WebGL, to pan, zoom,
// select a node and expand its neighbourhood. The canvas is redrawn only
// when something changed (no loop while idle).
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { ApiError, get } from "../api/client";
import type { components } from "../api/schema";
import { GraphModel, NO_CLUSTER, NODE_SPACING, WASTE_NO, WASTE_YES } from "../lib/graph-data";
import { GridIndex } from "../lib/graph-index";
import { JSON_MAX, loadGraph, type Format, type Loaded } from "../lib/graph-load";
import { cssColor, legend, nodeColors, type ColorBy } from "../lib/graph-style";
import { fitBounds, overlapFraction, panBy, screenToWorld, sheetCovers, sheetFor, sheetPlacement, visibleBounds, worldToScreen, zoomAt, type ViewState } from "../lib/graph-view";
import { ErrorBox, Loading } from "../lib/ui";
import { money, num, milliseconds } from "../lib/format";
import { href } from "../router";
import { GraphRenderer, WebGLUnavailable } from "../lib/webgl-graph";

type Node = components["schemas"]["Node"];
type NodeEdges = components["schemas"]["NodeEdges"];

/** Edges drawn at most at once (estimated from the part of the graph on the canvas sheet). */
const EDGE_BUDGET = 60_000;
const KEY_PAN = 80;
const ZOOM_STEP = 1.5;
/** While the wheel turns (and this long after), zooming scales the last picture. */
const WHEEL_SETTLE_MS = 160;

interface Neighbourhood {
  center: number;
  nodes: number[];
  pairs: number[];
  incoming: number;
  outgoing: number;
  added: number;
  truncated: boolean;
}

/** Node diameter in CSS pixels at a zoom: two thirds of the spacing, within bounds. */
export function pointSizeAt(scale: number): number {
  return Math.min(14, Math.max(2, NODE_SPACING * scale * 0.6));
}

export function GraphView({ route }: ViewProps) {
  const prefer: Format = route.query.get("format") === "json" ? "json" : "binary";
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    const ctl = new AbortController();
    setLoaded(null);
    setError(null);
    loadGraph(ctl.signal, prefer).then(
      (l) => {
        if (!ctl.signal.aborted) setLoaded(l);
      },
      (e: unknown) => {
        if (!ctl.signal.aborted) setError(e instanceof Error ? e : new Error(String(e)));
      },
    );
    return () => ctl.abort();
  }, [prefer, tick]);

  return (
    <div class="graph-view">
      <h1>Graph</h1>
      <ErrorBox error={error} />
      {error ? (
        <button type="button" onClick={() => setTick((t) => t + 1)}>
          Try again
        </button>
      ) : null}
      {!loaded && !error ? <Loading what="the graph" /> : null}
      {loaded ? <GraphCanvas key={`${prefer}-${tick}`} loaded={loaded} onReload={() => setTick((t) => t + 1)} /> : null}
    </div>
  );
}

function GraphCanvas({ loaded, onReload }: { loaded: Loaded; onReload: () => void }) {
  const model = loaded.model;
  const stageRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const labelsRef = useRef<HTMLDivElement>(null);
  const rendererRef = useRef<GraphRenderer | null>(null);
  const viewRef = useRef<ViewState | null>(null);
  const indexRef = useRef<GridIndex | null>(null);
  const frameRef = useRef(0);
  const framesRef = useRef(0);
  const scenesRef = useRef(0);
  const [glError, setGlError] = useState<string | null>(null);
  const [firstFrameMs, setFirstFrameMs] = useState<number | null>(null);
  const [colorBy, setColorBy] = useState<ColorBy>("provider");
  const [wasteNote, setWasteNote] = useState<string | null>(null);
  const [wasteError, setWasteError] = useState<Error | null>(null);
  const [selected, setSelected] = useState(-1);
  const [hood, setHood] = useState<Neighbourhood | null>(null);
  const [edgesShown, setEdgesShown] = useState(false);
  const [version, setVersion] = useState(0);
  const mountedAt = useRef(performance.now());
  const wheelAt = useRef(-1e9);
  const settleTimer = useRef(0);
  const renderRef = useRef<() => void>(() => undefined);
  const sheetElRef = useRef<HTMLDivElement>(null);
  const sheetRef = useRef<ViewState | null>(null);
  const dirtyRef = useRef(true);

  const bounds = useMemo(() => model.bounds(), [model, version]);

  // A frame: move the sheet (the oversized canvas) under the stage, and
  // draw the sheet again only when it no longer holds what the stage shows.
  const render = useCallback(() => {
    frameRef.current = 0;
    const r = rendererRef.current;
    const v = viewRef.current;
    const canvas = canvasRef.current;
    const labels = labelsRef.current;
    const sheetEl = sheetElRef.current;
    if (!r || !v || !canvas || !labels || !sheetEl) return;
    const t0 = performance.now();
    let s = sheetRef.current;
    const fresh = s && !dirtyRef.current && sheetCovers(s, v);
    const ratio = s ? v.scale / s.scale : 0;
    const wheeling = performance.now() - wheelAt.current < WHEEL_SETTLE_MS;
    if (!fresh && !(s && !dirtyRef.current && wheeling && ratio > 0.25 && ratio < 4)) {
      const dpr = Math.min(window.devicePixelRatio || 1, 2);
      const next = sheetFor(v, dpr, r.maxSize);
      // Edges are drawn when few enough of them are on the sheet.
      const onSheet = overlapFraction(visibleBounds(next), bounds);
      const showEdges = model.edgeCount * onSheet <= EDGE_BUDGET && r.canDrawEdges(model.count);
      const w = Math.round(next.width * dpr);
      const h = Math.round(next.height * dpr);
      if (canvas.width !== w) canvas.width = w;
      if (canvas.height !== h) canvas.height = h;
      canvas.style.width = `${next.width}px`;
      canvas.style.height = `${next.height}px`;
      r.draw(next, { pointSize: pointSizeAt(next.scale), edges: showEdges, edgeAlpha: next.scale > 0.3 ? 0.55 : 0.3 });
      placeLabels(labels, model, next);
      sheetRef.current = s = next;
      dirtyRef.current = false;
      scenesRef.current++;
      canvas.dataset.scenes = String(scenesRef.current);
      setEdgesShown(showEdges);
    } else if (!fresh && !settleTimer.current) {
      // The wheel is turning: the old picture is scaled until it stops.
      settleTimer.current = window.setTimeout(() => {
        settleTimer.current = 0;
        if (!frameRef.current) frameRef.current = requestAnimationFrame(renderRef.current);
      }, WHEEL_SETTLE_MS);
    }
    if (s) {
      const p = sheetPlacement(s, v);
      sheetEl.style.transform = `translate(${p.left}px, ${p.top}px)${p.k !== 1 ? ` scale(${p.k})` : ""}`;
    }
    framesRef.current++;
    // What the stage shows (layout units at its centre, pixels per unit).
    canvas.dataset.view = `${v.cx.toFixed(2)},${v.cy.toFixed(2)},${v.scale.toPrecision(6)}`;
    canvas.dataset.frameMs = (performance.now() - t0).toFixed(2);
    canvas.dataset.frames = String(framesRef.current);
    if (framesRef.current === 1) setFirstFrameMs(performance.now() - mountedAt.current);
  }, [model, bounds]);

  /** Something drawn changed: the next frame draws the sheet again. */
  const redraw = useCallback(() => {
    dirtyRef.current = true;
    if (!frameRef.current) frameRef.current = requestAnimationFrame(renderRef.current);
  }, []);

  renderRef.current = render;

  const requestRender = useCallback(() => {
    if (!frameRef.current) frameRef.current = requestAnimationFrame(render);
  }, [render]);

  const setView = useCallback(
    (v: ViewState) => {
      viewRef.current = v;
      requestRender();
    },
    [requestRender],
  );

  // The renderer, once per loaded graph.
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    let r: GraphRenderer;
    try {
      r = new GraphRenderer(canvas);
    } catch (e) {
      setGlError(e instanceof WebGLUnavailable ? e.message : String(e));
      return;
    }
    rendererRef.current = r;
    const lost = (e: Event) => {
      e.preventDefault();
      r.lost = true;
      setGlError("the graphics context was lost");
    };
    canvas.addEventListener("webglcontextlost", lost);
    return () => {
      canvas.removeEventListener("webglcontextlost", lost);
      if (frameRef.current) cancelAnimationFrame(frameRef.current);
      frameRef.current = 0;
      window.clearTimeout(settleTimer.current);
      settleTimer.current = 0;
      r.dispose();
      rendererRef.current = null;
    };
  }, [model]);

  // Geometry and the pick index when the nodes change.
  useEffect(() => {
    const r = rendererRef.current;
    if (!r) return;
    r.setGeometry(model.x, model.y, model.count, model.edges);
    r.setBoxes(model.clusters.filter((c) => c.count > 0));
    indexRef.current = new GridIndex(model.x, model.y, model.count);
    redraw();
  }, [model, version, glError, redraw]);

  // Colours.
  useEffect(() => {
    const r = rendererRef.current;
    if (!r) return;
    r.setColors(nodeColors(model, colorBy));
    redraw();
  }, [model, colorBy, version, wasteNote, glError, redraw]);

  // The selection and its neighbourhood.
  useEffect(() => {
    const r = rendererRef.current;
    if (!r) return;
    const h = hood && hood.center === selected ? hood : null;
    r.setHighlight(selected, h ? h.nodes : [], h ? h.pairs : []);
    redraw();
  }, [selected, hood, version, glError, redraw]);

  // The view follows the stage's size (the sheet is sized from it).
  useEffect(() => {
    const stage = stageRef.current;
    if (!stage) return;
    const resize = () => {
      const w = Math.max(1, stage.clientWidth);
      const h = Math.max(1, stage.clientHeight);
      const v = viewRef.current;
      if (v && v.width === w && v.height === h) return;
      viewRef.current = v ? { ...v, width: w, height: h } : fitBounds(bounds, w, h);
      redraw();
    };
    resize();
    const ro = new ResizeObserver(resize);
    ro.observe(stage);
    return () => ro.disconnect();
    // The first fit only: later changes of bounds keep the view.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [model, redraw]);

  const select = useCallback((i: number) => {
    setSelected(i);
  }, []);

  const focusNode = useCallback(
    (i: number) => {
      const v = viewRef.current;
      if (!v || i < 0) return;
      setView({ ...v, cx: model.x[i]!, cy: model.y[i]!, scale: Math.max(v.scale, 0.4) });
      select(i);
    },
    [model, setView, select],
  );

  // Pointer: drag pans, a click selects, the wheel zooms about the pointer.
  useEffect(() => {
    const canvas = stageRef.current;
    if (!canvas) return;
    let drag: { id: number; x: number; y: number; moved: number } | null = null;
    const local = (e: MouseEvent): [number, number] => {
      const b = canvas.getBoundingClientRect();
      return [e.clientX - b.left, e.clientY - b.top];
    };
    const down = (e: PointerEvent) => {
      if (e.button !== 0) return;
      drag = { id: e.pointerId, x: e.clientX, y: e.clientY, moved: 0 };
      try {
        canvas.setPointerCapture(e.pointerId);
      } catch {
        // A synthetic pointer cannot be captured; dragging still works.
      }
    };
    const move = (e: PointerEvent) => {
      const v = viewRef.current;
      if (!drag || e.pointerId !== drag.id || !v) return;
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      drag.x = e.clientX;
      drag.y = e.clientY;
      drag.moved += Math.abs(dx) + Math.abs(dy);
      setView(panBy(v, dx, dy));
    };
    const up = (e: PointerEvent) => {
      if (!drag || e.pointerId !== drag.id) return;
      const clicked = drag.moved < 5;
      drag = null;
      const v = viewRef.current;
      const idx = indexRef.current;
      if (!clicked || !v || !idx) return;
      const [sx, sy] = local(e);
      const [wx, wy] = screenToWorld(v, sx, sy);
      const radius = (pointSizeAt(v.scale) / 2 + 4) / v.scale;
      select(idx.nearest(wx, wy, radius));
    };
    const wheel = (e: WheelEvent) => {
      const v = viewRef.current;
      if (!v) return;
      e.preventDefault();
      const [sx, sy] = local(e);
      const dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
      wheelAt.current = performance.now();
      setView(zoomAt(v, Math.exp(-dy * 0.0015), sx, sy));
    };
    canvas.addEventListener("pointerdown", down);
    canvas.addEventListener("pointermove", move);
    canvas.addEventListener("pointerup", up);
    canvas.addEventListener("pointercancel", up);
    canvas.addEventListener("wheel", wheel, { passive: false });
    return () => {
      canvas.removeEventListener("pointerdown", down);
      canvas.removeEventListener("pointermove", move);
      canvas.removeEventListener("pointerup", up);
      canvas.removeEventListener("pointercancel", up);
      canvas.removeEventListener("wheel", wheel);
    };
  }, [setView, select]);

  const zoomBy = (f: number) => {
    const v = viewRef.current;
    if (v) setView(zoomAt(v, f, v.width / 2, v.height / 2));
  };
  const fit = () => {
    const v = viewRef.current;
    if (v) setView(fitBounds(bounds, v.width, v.height));
  };
  const onKey = (e: KeyboardEvent) => {
    const v = viewRef.current;
    if (!v) return;
    const pans: Record<string, [number, number]> = { ArrowLeft: [KEY_PAN, 0], ArrowRight: [-KEY_PAN, 0], ArrowUp: [0, KEY_PAN], ArrowDown: [0, -KEY_PAN] };
    const p = pans[e.key];
    if (p) setView(panBy(v, p[0], p[1]));
    else if (e.key === "+" || e.key === "=") zoomBy(ZOOM_STEP);
    else if (e.key === "-" || e.key === "_") zoomBy(1 / ZOOM_STEP);
    else if (e.key === "0") fit();
    else if (e.key === "Escape") select(-1);
    else return;
    e.preventDefault();
  };

  const colourBy = async (by: ColorBy) => {
    setColorBy(by);
    setWasteError(null);
    if (by !== "waste" || model.wasteKnown() > 0) return;
    // The laid-out forms carry no verdicts: take them from the flow graph,
    // which chooses its nodes the same way (up to its maximum).
    try {
      const limit = Math.min(JSON_MAX, Math.max(1, model.loaded));
      setWasteNote("Loading waste verdicts…");
      const flow = await get("/api/v1/graph", { query: { limit } });
      const matched = model.applyWaste(flow.nodes);
      setWasteNote(`Waste verdicts of ${num(matched)} of ${num(model.count)} drawn nodes (the flow graph gives at most ${num(JSON_MAX)}).`);
    } catch (e) {
      setWasteNote(null);
      setWasteError(e instanceof Error ? e : new Error(String(e)));
    }
  };

  const expand = async (center: number) => {
    const crn = model.crn(center);
    const edges: NodeEdges = await get("/api/v1/graph/nodes/{crn}/edges", { params: { crn } });
    const others = [...edges.outgoing.map((e) => e.target_crn), ...edges.incoming.map((e) => e.source_crn)];
    const added = model.addNodes(others, center);
    const nodes = new Set<number>();
    const pairs: number[] = [];
    for (const e of [...edges.outgoing, ...edges.incoming]) {
      const s = model.indexOf(e.source_crn);
      const t = model.indexOf(e.target_crn);
      if (s < 0 || t < 0) continue;
      pairs.push(s, t);
      nodes.add(s === center ? t : s);
    }
    if (added.length) setVersion((x) => x + 1);
    setHood({ center, nodes: [...nodes], pairs, incoming: edges.incoming_total, outgoing: edges.outgoing_total, added: added.length, truncated: edges.truncated });
  };

  if (glError) {
    return (
      <div class="error" role="alert">
        The graph cannot be drawn: {glError}. Drawing it needs WebGL, which this browser or machine does not offer (it may be switched off, or
        the graphics driver blocked). The <a href={href("explorer")}>Explorer</a> lists the same resources.{" "}
        <button type="button" onClick={onReload}>
          Try again
        </button>
      </div>
    );
  }

  const entries = legend(model, colorBy);
  const total = model.totalNodes;
  const label = `Graph of ${num(model.count)} resources in ${num(model.clusters.length)} clusters, coloured by ${colorBy === "provider" ? "provider" : "waste verdict"}${
    selected >= 0 ? `; selected ${model.crn(selected)}` : ""
  }.`;

  return (
    <div class="graph-layout">
      <div class="graph-main">
        <div class="graph-toolbar">
          <div class="graph-zoom" role="group" aria-label="Zoom">
            <button type="button" onClick={() => zoomBy(ZOOM_STEP)} aria-label="Zoom in" title="Zoom in (+)">
              +
            </button>
            <button type="button" onClick={() => zoomBy(1 / ZOOM_STEP)} aria-label="Zoom out" title="Zoom out (-)">
              −
            </button>
            <button type="button" onClick={fit} title="Show the whole graph (0)">
              Fit
            </button>
          </div>
          <button type="button" onClick={onReload} title="Load the graph again from the daemon">
            Reload
          </button>
          <label>
            Colour by{" "}
            <select value={colorBy} onChange={(e) => void colourBy((e.target as HTMLSelectElement).value as ColorBy)}>
              <option value="provider">provider</option>
              <option value="waste">waste verdict</option>
            </select>
          </label>
          <SearchBox model={model} onFocus={focusNode} />
        </div>
        <p class="graph-counts" data-drawn={model.count} data-loaded={model.loaded} data-total={total ?? ""} data-format={loaded.format}>
          Drawing {num(model.count)} {total !== null ? `of ${num(total)} visible` : ""} nodes
          {model.count > model.loaded ? ` (${num(model.count - model.loaded)} added by neighbourhoods)` : ""}, {num(model.edgeCount)} edges, in{" "}
          {num(model.clusters.length)} clusters.{" "}
          {model.truncated ? (
            <strong>
              The graph was cut at {num(model.loaded)} nodes{loaded.format === "json" ? ` (the JSON form gives at most ${num(JSON_MAX)})` : ""}.
            </strong>
          ) : null}
          <span class="muted">
            {" "}
            Loaded as {loaded.format === "binary" ? "FlatBuffers" : "JSON"}: {(loaded.bytes / 1e6).toFixed(1)} MB in {milliseconds(loaded.fetchMs)}, decoded in{" "}
            {milliseconds(loaded.decodeMs)}
            {firstFrameMs !== null ? `, first frame ${milliseconds(firstFrameMs)}` : ""}. {edgesShown ? "Edges shown." : "Zoom in to see edges."}
          </span>
        </p>
        <div
          class="graph-stage"
          ref={stageRef}
          tabIndex={0}
          role="application"
          aria-label="Graph canvas: drag or use the arrow keys to pan, the wheel or + and - to zoom, 0 to fit, click a node to select it, Escape to clear"
          onKeyDown={onKey}
        >
          <div class="graph-sheet" ref={sheetElRef}>
            <canvas ref={canvasRef} class="graph-canvas" role="img" aria-label={label} />
            <div ref={labelsRef} class="graph-labels" aria-hidden="true" />
          </div>
        </div>
        <ul class="graph-legend" aria-label="Legend">
          {entries.map((e) => (
            <li key={e.label}>
              <span class="swatch" style={{ background: cssColor(e.color) }} aria-hidden="true" />
              {e.label} ({num(e.count)})
            </li>
          ))}
        </ul>
        {wasteNote && colorBy === "waste" ? <p class="muted">{wasteNote}</p> : null}
        <ErrorBox error={wasteError} />
      </div>
      <NodePanel
        model={model}
        index={selected}
        hood={hood && hood.center === selected ? hood : null}
        onExpand={expand}
        onClear={() => select(-1)}
        onFocus={focusNode}
      />
    </div>
  );
}

function SearchBox({ model, onFocus }: { model: GraphModel; onFocus: (i: number) => void }) {
  const [q, setQ] = useState("");
  const [results, setResults] = useState<number[] | null>(null);
  const submit = (e: Event) => {
    e.preventDefault();
    const found = model.search(q, 20);
    setResults(found);
    if (found.length >= 1 && (found.length === 1 || model.crn(found[0]!) === q.trim())) onFocus(found[0]!);
  };
  return (
    <form class="graph-search" role="search" onSubmit={submit}>
      <label>
        Find a CRN{" "}
        <input type="search" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} placeholder="part of a CRN" size={28} />
      </label>
      <button type="submit">Find</button>
      {results !== null ? (
        <div class="graph-results" aria-live="polite">
          {results.length === 0 ? (
            <span>No drawn node matches.</span>
          ) : results.length > 1 ? (
            <ul aria-label="Matching nodes">
              {results.map((i) => (
                <li key={i}>
                  <button type="button" class="linklike mono" onClick={() => onFocus(i)}>
                    {model.crn(i)}
                  </button>
                </li>
              ))}
              {results.length === 20 ? <li class="muted">The first 20 matches; type more to narrow.</li> : null}
            </ul>
          ) : null}
        </div>
      ) : null}
    </form>
  );
}

function NodePanel(props: {
  model: GraphModel;
  index: number;
  hood: Neighbourhood | null;
  onExpand: (i: number) => Promise<void>;
  onClear: () => void;
  onFocus: (i: number) => void;
}) {
  const { model, index, hood } = props;
  const crn = index >= 0 ? model.crn(index) : "";
  const [node, setNode] = useState<Node | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const [expandError, setExpandError] = useState<Error | null>(null);
  useEffect(() => {
    setNode(null);
    setError(null);
    setExpandError(null);
    if (!crn) return;
    const ctl = new AbortController();
    get("/api/v1/graph/nodes/{crn}", { params: { crn }, signal: ctl.signal }).then(
      (n) => {
        if (!ctl.signal.aborted) setNode(n);
      },
      (e: unknown) => {
        if (!ctl.signal.aborted) setError(e instanceof Error ? e : new Error(String(e)));
      },
    );
    return () => ctl.abort();
  }, [crn]);

  if (index < 0) {
    return (
      <aside class="graph-panel card" aria-label="Selected node">
        <h2>Selected node</h2>
        <p class="muted">Click a node, or find one by its CRN, to see it here.</p>
      </aside>
    );
  }
  const cluster = model.cluster[index] !== NO_CLUSTER ? model.clusters[model.cluster[index]!] : undefined;
  const cost = node ? node.cost_usd_mo : model.cost(index);
  // Until (or unless) the node's own record is in: what the graph carried.
  const w = model.waste[index];
  const drawnWaste = w === WASTE_YES ? "yes" : w === WASTE_NO ? "no" : error ? "unknown" : "…";
  const expand = async () => {
    setBusy(true);
    setExpandError(null);
    try {
      await props.onExpand(index);
    } catch (e) {
      setExpandError(e instanceof ApiError || e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };
  return (
    <aside class="graph-panel card" aria-label="Selected node">
      <h2>Selected node</h2>
      <p class="mono graph-crn">{crn}</p>
      <dl class="graph-facts">
        <dt>Type</dt>
        <dd>{node?.type ?? model.type(index)}</dd>
        <dt>Provider</dt>
        <dd>{node?.provider ?? model.providers[model.provider[index]!] ?? ""}</dd>
        {cluster ? (
          <>
            <dt>Cluster</dt>
            <dd>{cluster.id}</dd>
          </>
        ) : null}
        {node ? (
          <>
            <dt>State</dt>
            <dd>{node.state || "—"}</dd>
          </>
        ) : null}
        <dt>Cost</dt>
        <dd>{cost === null ? (error ? "unknown" : "…") : `${money(cost)} a month`}</dd>
        <dt>Waste</dt>
        <dd>{node ? (node.is_waste ? `yes${node.waste_reason ? `: ${node.waste_reason}` : ""}` : "no") : drawnWaste}</dd>
      </dl>
      {!node && !error ? <Loading what="the node" /> : null}
      <ErrorBox error={error} />
      <p>
        <a href={href("node", [crn])}>Open the resource page</a>
      </p>
      <div class="actions">
        <button type="button" class="primary" onClick={() => void expand()} disabled={busy}>
          Expand neighbourhood
        </button>
        <button type="button" onClick={() => props.onFocus(index)}>
          Centre on it
        </button>
        <button type="button" onClick={props.onClear}>
          Clear selection
        </button>
      </div>
      <ErrorBox error={expandError} />
      {hood ? (
        <div class="graph-hood" aria-live="polite">
          <h3>Neighbourhood</h3>
          <p data-neighbours={hood.nodes.length}>
            {num(hood.nodes.length)} neighbours ({num(hood.outgoing)} outgoing, {num(hood.incoming)} incoming edges)
            {hood.added ? `; ${num(hood.added)} were not drawn and were added around it` : ""}
            {hood.truncated ? "; the API cut the lists" : ""}.
          </p>
          {hood.nodes.length ? (
            <ul class="graph-neighbours">
              {hood.nodes.slice(0, 50).map((i) => (
                <li key={i}>
                  <button type="button" class="linklike mono" onClick={() => props.onFocus(i)}>
                    {model.crn(i)}
                  </button>
                </li>
              ))}
              {hood.nodes.length > 50 ? <li class="muted">and {num(hood.nodes.length - 50)} more</li> : null}
            </ul>
          ) : null}
        </div>
      ) : null}
    </aside>
  );
}

/**
 * Labels of the clusters on the sheet wide enough to hold one, as plain
 * elements over the canvas (they move with it).
 */
function placeLabels(host: HTMLDivElement, model: GraphModel, v: ViewState): void {
  const frag = document.createDocumentFragment();
  let n = 0;
  for (const c of model.clusters) {
    if (!c.count) continue;
    const [x0, y0] = worldToScreen(v, c.x, c.y);
    const w = c.width * v.scale;
    if (w < 70 || x0 > v.width || y0 > v.height || x0 + w < 0 || y0 + c.height * v.scale < 0) continue;
    if (++n > 400) break;
    const el = document.createElement("span");
    el.className = "graph-label";
    el.textContent = c.id;
    el.style.transform = `translate(${Math.round(x0)}px, ${Math.round(y0) - 17}px)`;
    el.style.maxWidth = `${Math.round(w)}px`;
    frag.appendChild(el);
  }
  host.replaceChildren(frag);
}

// The Overview: what an operator keeps open all day. Every card loads on
// its own (the requests go out together and each card shows as its answer
// arrives); a completed scan, seen on the live stream, refreshes them all.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, get } from "../api/client";
import type { Schemas } from "../api/types";
import { useApp, useCan } from "../context";
import { BarChart, ChartData, LineChart, type Series } from "../lib/chart";
import { compactMoney } from "../lib/chart-scale";
import { milliseconds, money, num, relative, rfc3339 } from "../lib/format";
import {
  type Breakdown,
  breakdownRows,
  completedScanSeq,
  type Dimension,
  DIMENSIONS,
  fetchBreakdown,
  type Metric,
  METRIC_NAMES,
  phasesOf,
  type ScanPoint,
  scanPoints,
  startScan,
} from "../lib/overview-data";
import { Card, ErrorBox, Loading, Table, type TableColumn, useAsync } from "../lib/ui";
import { href, navigate } from "../router";
import type { ViewProps } from ".";

type Stats = Schemas["GraphStats"];
type Plugin = Schemas["Plugin"];

/** Groups drawn per breakdown chart; the others are summed in one row. */
const TOP = 10;
/** Past scans in the trend. */
const TREND_SCANS = 100;

function useNow(everyMs: number): number {
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now() / 1000), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

function When({ seconds, now }: { seconds: number; now: number }) {
  const iso = rfc3339(seconds);
  return (
    <time dateTime={iso} title={iso}>
      {relative(seconds, now)}
    </time>
  );
}

type ScanState = { kind: "idle" } | { kind: "starting" } | { kind: "running"; seq: number } | { kind: "done"; seq: number } | { kind: "failed"; error: Error };

export function Overview(_props: ViewProps) {
  const { events } = useApp();
  const canScan = useCan("operator");
  const now = useNow(30_000);
  // Bumped by every completed scan: each card reloads.
  const [gen, setGen] = useState(0);
  const [scan, setScan] = useState<ScanState>({ kind: "idle" });
  const [metric, setMetric] = useState<Metric>("cost");

  useEffect(
    () =>
      events.subscribe((e) => {
        const seq = completedScanSeq(e);
        if (seq === null) return;
        setGen((g) => g + 1);
        setScan((s) => (s.kind === "running" && seq >= s.seq ? { kind: "done", seq } : s.kind === "failed" ? { kind: "idle" } : s));
      }),
    [events],
  );

  const stats = useAsync((signal) => get("/api/v1/graph/stats", { signal }), [gen]);
  const history = useAsync(
    (signal) => get("/api/v1/history", { query: { type: "SCAN_COMPLETED", limit: TREND_SCANS }, signal }).then((p) => scanPoints(p.events)),
    [gen],
  );
  const plugins = useAsync((signal) => get("/api/v1/plugins", { signal }), [gen]);

  const onScan = () => {
    setScan({ kind: "starting" });
    startScan().then(
      (s) => setScan({ kind: "running", seq: s.scan_seq }),
      (e: unknown) => setScan({ kind: "failed", error: e instanceof Error ? e : new Error(String(e)) }),
    );
  };

  const points = history.data;
  const last = points && points.length > 0 ? points[points.length - 1] : undefined;

  return (
    <div class="overview">
      <div class="view-head">
        <h1>Overview</h1>
        {canScan ? (
          // Not held disabled while the scan runs: a scan that fails leaves
          // no event to re-enable it; a second click reads a clear 409.
          <button type="button" class="primary" onClick={onScan} disabled={scan.kind === "starting"}>
            Scan now
          </button>
        ) : null}
      </div>
      <ScanStatus scan={scan} />
      {stats.data?.simulated ? (
        <div class="notice mock-notice" role="note">
          <strong>Mock estate.</strong> These figures come from a simulated estate
          {simulatedSources(stats.data)}, not from a real cloud account.
        </div>
      ) : null}
      <Kpis stats={stats.data} error={stats.error} last={last} now={now} />

      <fieldset class="segmented">
        <legend>Breakdown by</legend>
        {(Object.keys(METRIC_NAMES) as Metric[]).map((m) => (
          <label key={m}>
            <input type="radio" name="overview-metric" value={m} checked={metric === m} onChange={() => setMetric(m)} />
            {METRIC_NAMES[m]}
          </label>
        ))}
      </fieldset>
      <div class="grid breakdown-grid">
        {DIMENSIONS.map((d) => (
          <BreakdownCard key={d} by={d} metric={metric} gen={gen} />
        ))}
      </div>

      <div class="grid">
        <TrendCard points={points} error={history.error} />
        <LastScanCard last={last} error={history.error} loading={history.data === null && history.loading} />
      </div>
      <div class="grid">
        <SourcesCard stats={stats.data} error={stats.error} now={now} />
        <PluginsCard plugins={plugins.data} error={plugins.error} />
      </div>
    </div>
  );
}

function simulatedSources(s: Stats): string {
  const names = s.sources.filter((x) => x.simulated).map((x) => x.name);
  return names.length ? ` (source ${names.join(", ")})` : "";
}

function ScanStatus({ scan }: { scan: ScanState }) {
  if (scan.kind === "failed") {
    const e = scan.error;
    if (e instanceof ApiError && e.isConflict) {
      return (
        <div class="error" role="alert">
          A scan is already running: the figures refresh when it completes.
        </div>
      );
    }
    return <ErrorBox error={e} />;
  }
  return (
    <div class="scan-status" role="status" aria-live="polite">
      {scan.kind === "running"
        ? `Scan ${scan.seq} started; the figures refresh when it completes.`
        : scan.kind === "done"
          ? `Scan ${scan.seq} completed; the figures are up to date.`
          : ""}
    </div>
  );
}

function lastScanAt(stats: Stats): number | null {
  let best: number | null = null;
  for (const s of stats.sources) {
    const t = s.last_scan ? Date.parse(s.last_scan.finished_at) : NaN;
    if (Number.isFinite(t) && (best === null || t > best)) best = t;
  }
  return best === null ? null : best / 1000;
}

function Kpi({ label, children, sub, testId }: { label: string; children: ComponentChildren; sub?: ComponentChildren; testId: string }) {
  return (
    <div class="kpi" data-testid={testId}>
      <div class="label">{label}</div>
      <div class="value">{children}</div>
      {sub ? <div class="sub muted">{sub}</div> : null}
    </div>
  );
}

function Kpis({ stats, error, last, now }: { stats: Stats | null; error: Error | null; last: ScanPoint | undefined; now: number }) {
  if (error && !stats) return <ErrorBox error={error} />;
  if (!stats) return <Loading what="the estate's totals" />;
  const at = lastScanAt(stats) ?? last?.at ?? null;
  return (
    <section class="kpis" aria-label="Totals">
      <Kpi label="Monthly cost" testId="kpi-cost">
        {money(stats.total_cost_usd_mo)}
      </Kpi>
      <Kpi label="Waste" testId="kpi-waste" sub={last ? `as of scan ${last.scanSeq}` : undefined}>
        {last ? (
          <a href={href("explorer", [], { waste: "true" })}>{money(last.waste)}</a>
        ) : (
          "–"
        )}
      </Kpi>
      <Kpi label="Projected savings" testId="kpi-savings">
        {money(stats.projected_savings_usd_mo)}
      </Kpi>
      <Kpi label="Active resources" testId="kpi-nodes">
        {num(stats.active_nodes)}
      </Kpi>
      <Kpi label="Waste resources" testId="kpi-waste-nodes">
        <a href={href("explorer", [], { waste: "true" })}>{num(stats.waste_nodes)}</a>
      </Kpi>
      <Kpi label="Edges" testId="kpi-edges">
        {num(stats.total_edges)}
      </Kpi>
      <Kpi label="Last scan" testId="kpi-last-scan">
        {at === null ? "never" : <When seconds={at} now={now} />}
      </Kpi>
    </section>
  );
}

const BAR_SERIES: Record<Metric, Series[]> = {
  cost: [
    { key: "waste", name: "Waste", cls: "chart-s-waste" },
    { key: "rest", name: "Rest of the cost", cls: "chart-s-cost" },
  ],
  waste: [{ key: "waste", name: "Waste", cls: "chart-s-waste" }],
  savings: [{ key: "savings", name: "Projected savings", cls: "chart-s-savings" }],
};

const DIMENSION_NAMES: Record<Dimension, string> = { provider: "provider", account: "account", region: "region", type: "type" };

function BreakdownCard({ by, metric, gen }: { by: Dimension; metric: Metric; gen: number }) {
  const b = useAsync((signal) => fetchBreakdown(by, TOP, signal), [by, gen]);
  const title = `${METRIC_NAMES[metric]} by ${DIMENSION_NAMES[by]}`;
  return (
    <Card title={title} actions={b.data ? <span class="muted">{num(b.data.total_groups)} groups</span> : null}>
      {b.error && !b.data ? <ErrorBox error={b.error} /> : null}
      {!b.data && !b.error ? <Loading what={`the ${by} breakdown`} /> : null}
      {b.data ? <BreakdownChart data={b.data} metric={metric} title={title} /> : null}
    </Card>
  );
}

function BreakdownChart({ data, metric, title }: { data: Breakdown; metric: Metric; title: string }) {
  const rows = breakdownRows(data, metric);
  if (rows.length === 0) return <p class="muted">No resources in the graph.</p>;
  const summary = `${title}: ${rows
    .slice(0, 5)
    .map((r) => `${r.label} ${money(r.value)}`)
    .join(", ")}${rows.length > 5 ? ", and more (see the data table)" : ""}.`;
  const columns: TableColumn<(typeof rows)[number]>[] = [
    { key: "key", header: data.by, cell: (r) => (r.href ? <a href={r.href}>{r.label}</a> : r.label) },
    { key: "value", header: METRIC_NAMES[metric], cell: (r) => money(r.value), numeric: true },
  ];
  const groups = new Map(data.groups.map((g) => [g.key, g]));
  const full: TableColumn<(typeof rows)[number]>[] = [
    ...columns,
    { key: "nodes", header: "Resources", cell: (r) => num(r.rest ? data.rest?.nodes : groups.get(r.key)?.nodes), numeric: true },
    { key: "cost", header: "Cost", cell: (r) => money(r.rest ? data.rest?.cost_usd_mo : groups.get(r.key)?.cost_usd_mo), numeric: true },
    { key: "waste", header: "Waste", cell: (r) => money(r.rest ? data.rest?.waste_usd_mo : groups.get(r.key)?.waste_usd_mo), numeric: true },
    {
      key: "savings",
      header: "Savings",
      cell: (r) => money(r.rest ? data.rest?.projected_savings_usd_mo : groups.get(r.key)?.projected_savings_usd_mo),
      numeric: true,
    },
  ];
  return (
    <>
      <BarChart
        label={summary}
        testId={`breakdown-${data.by}`}
        series={BAR_SERIES[metric]}
        rows={rows.map((r) => {
          const h = r.href;
          return {
            key: r.key,
            label: r.label,
            parts: r.parts,
            end: compactMoney(r.value),
            title: `${r.label}: ${money(r.value)}${h ? " (open in the Explorer)" : ""}`,
            onClick: h ? () => navigate(h) : undefined,
            muted: r.rest,
          };
        })}
      />
      <ChartData>
        <Table columns={full.filter((c) => c.key !== metric)} rows={rows} rowKey={(r) => r.key} caption={title} />
      </ChartData>
    </>
  );
}

function shortTime(seconds: number): string {
  return rfc3339(seconds).slice(5, 16).replace("T", " ");
}

function TrendCard({ points, error }: { points: ScanPoint[] | null; error: Error | null }) {
  return (
    <Card title="Trend over past scans">
      {error && !points ? <ErrorBox error={error} /> : null}
      {!points && !error ? <Loading what="past scans" /> : null}
      {points && points.length === 0 ? <p class="muted">No scan has completed yet.</p> : null}
      {points && points.length > 0 ? <Trend points={points} /> : null}
    </Card>
  );
}

function Trend({ points }: { points: ScanPoint[] }) {
  const first = points[0];
  const last = points[points.length - 1];
  if (!first || !last) return null;
  const label =
    points.length === 1
      ? `One scan so far (scan ${last.scanSeq}): cost ${money(last.cost)}, waste ${money(last.waste)}, projected savings ${money(last.savings)}.`
      : `Over the last ${points.length} scans, cost went from ${money(first.cost)} to ${money(last.cost)}, waste from ${money(first.waste)} to ${money(last.waste)}, projected savings from ${money(first.savings)} to ${money(last.savings)}.`;
  const columns: TableColumn<ScanPoint>[] = [
    { key: "scan", header: "Scan", cell: (p) => p.scanSeq, sort: (p) => p.scanSeq, numeric: true },
    { key: "at", header: "Completed", cell: (p) => rfc3339(p.at), sort: (p) => p.at },
    { key: "nodes", header: "Resources", cell: (p) => num(p.nodes), sort: (p) => p.nodes, numeric: true },
    { key: "cost", header: "Cost", cell: (p) => money(p.cost), sort: (p) => p.cost, numeric: true },
    { key: "waste", header: "Waste", cell: (p) => money(p.waste), sort: (p) => p.waste, numeric: true },
    { key: "savings", header: "Savings", cell: (p) => money(p.savings), sort: (p) => p.savings, numeric: true },
    { key: "duration", header: "Took", cell: (p) => milliseconds(p.durationMs), sort: (p) => p.durationMs, numeric: true },
  ];
  return (
    <>
      <LineChart
        label={label}
        testId="trend"
        xLabels={points.map((p) => `scan ${p.scanSeq}, ${shortTime(p.at)}`)}
        series={[
          { key: "cost", name: "Monthly cost", cls: "chart-s-cost", values: points.map((p) => p.cost), area: true },
          { key: "waste", name: "Waste", cls: "chart-s-waste", values: points.map((p) => p.waste) },
          { key: "savings", name: "Projected savings", cls: "chart-s-savings", values: points.map((p) => p.savings) },
        ]}
      />
      {points.length === 1 ? <p class="muted">The trend draws a line from the second scan on.</p> : null}
      <ChartData>
        <Table columns={columns} rows={points.slice().reverse()} rowKey={(p) => String(p.eventSeq)} caption="Past scans" />
      </ChartData>
    </>
  );
}

const PHASE_SERIES: Series[] = [{ key: "phase", name: "Duration", cls: "chart-s-phase" }];

function LastScanCard({ last, error, loading }: { last: ScanPoint | undefined; error: Error | null; loading: boolean }) {
  const title = last ? `Last scan (scan ${last.scanSeq})` : "Last scan";
  return (
    <Card title={title} actions={last ? <span class="muted">took {milliseconds(last.durationMs)}</span> : null}>
      {error && !last ? <ErrorBox error={error} /> : null}
      {loading ? <Loading what="the last scan" /> : null}
      {!loading && !error && !last ? <p class="muted">No scan has completed yet.</p> : null}
      {last ? <Phases last={last} /> : null}
    </Card>
  );
}

function Phases({ last }: { last: ScanPoint }) {
  const t = phasesOf(last.payload);
  if (!t) return <p class="notice">Phase timings not recorded for this scan.</p>;
  const total = t.phases.reduce((s, p) => s + p.durationMs, 0);
  const slowest = t.phases.reduce((a, b) => (b.durationMs > a.durationMs ? b : a));
  const label = `Phases of scan ${last.scanSeq}: ${t.phases.length} phases, ${milliseconds(total)} in all; the slowest is ${slowest.label} (${milliseconds(slowest.durationMs)}).`;
  return (
    <>
      <BarChart
        label={label}
        testId="phases"
        series={PHASE_SERIES}
        rows={t.phases.map((p) => ({
          key: p.name,
          label: p.label,
          parts: [{ key: "phase", value: p.durationMs }],
          end: milliseconds(p.durationMs),
        }))}
      />
      <p class="muted">
        {t.commitMs !== null ? <>Commit to the store: {milliseconds(t.commitMs)}. </> : null}
        Whole scan: {milliseconds(last.durationMs)}.
      </p>
      <ChartData>
        <Table
          columns={[
            { key: "name", header: "Phase", cell: (p) => <code>{p.name}</code> },
            { key: "ms", header: "Duration", cell: (p) => milliseconds(p.durationMs), numeric: true },
          ]}
          rows={t.phases}
          rowKey={(p) => p.name}
          caption={`Phases of scan ${last.scanSeq}`}
        />
      </ChartData>
    </>
  );
}

function SourcesCard({ stats, error, now }: { stats: Stats | null; error: Error | null; now: number }) {
  type Source = Schemas["GraphSource"];
  const columns: TableColumn<Source>[] = [
    {
      key: "name",
      header: "Source",
      cell: (s) => (
        <>
          {s.name} {s.simulated ? <span class="badge warn">simulated</span> : null}
        </>
      ),
    },
    {
      key: "providers",
      header: "Providers",
      cell: (s) =>
        s.providers.map((p, i) => (
          <span key={p}>
            {i > 0 ? ", " : ""}
            <a href={href("explorer", [], { provider: p })}>{p}</a>
          </span>
        )),
    },
    {
      key: "last",
      header: "Last scan",
      cell: (s) => {
        const l = s.last_scan;
        if (!l) return <span class="muted">not yet</span>;
        const t = Date.parse(l.finished_at) / 1000;
        return (
          <>
            <span class={`badge ${l.ok ? "good" : "bad"}`}>{l.ok ? "ok" : "failed"}</span>{" "}
            {Number.isFinite(t) ? <When seconds={t} now={now} /> : l.finished_at} · scan {l.scan_seq}
            {l.error ? <div class="error-text">{l.error}</div> : null}
          </>
        );
      },
    },
    { key: "nodes", header: "Resources", cell: (s) => (s.last_scan ? num(s.last_scan.nodes) : "–"), numeric: true },
  ];
  return (
    <Card title="Sources">
      {error && !stats ? <ErrorBox error={error} /> : null}
      {!stats && !error ? <Loading what="sources" /> : null}
      {stats ? <Table columns={columns} rows={stats.sources} rowKey={(s) => s.name} caption="Sources and their last scan" empty="No source has scanned yet." /> : null}
    </Card>
  );
}

function PluginStatus({ status }: { status: string }) {
  return <span class={`badge ${status === "verified" ? "good" : "bad"}`}>{status}</span>;
}

function PluginsCard({ plugins, error }: { plugins: Plugin[] | null; error: Error | null }) {
  const columns: TableColumn<Plugin>[] = [
    {
      key: "name",
      header: "Plugin",
      cell: (p) => (
        <>
          {p.display_name} <span class="muted">({p.name})</span>
        </>
      ),
      sort: (p) => p.name,
    },
    { key: "role", header: "Role", cell: (p) => p.role, sort: (p) => p.role },
    { key: "status", header: "Verification", cell: (p) => <PluginStatus status={p.status} />, sort: (p) => p.status },
    { key: "active", header: "Active", cell: (p) => (p.active ? "yes" : "no"), sort: (p) => (p.active ? 1 : 0) },
  ];
  const unhealthy = plugins?.filter((p) => p.status !== "verified").length ?? 0;
  return (
    <Card
      title="Plugins' health"
      actions={
        plugins ? (
          <span class={unhealthy ? "error-text" : "muted"}>{unhealthy ? `${unhealthy} not verified` : `${plugins.length} installed`}</span>
        ) : null
      }
    >
      {error && !plugins ? <ErrorBox error={error} /> : null}
      {!plugins && !error ? <Loading what="plugins" /> : null}
      {plugins ? (
        <>
          <Table
            columns={columns}
            rows={plugins}
            rowKey={(p) => p.name}
            caption="Installed plugins"
            empty="No plugin is installed; the daemon scans with its built-in sources."
          />
          <p class="muted">
            <a href={href("settings")}>Plugins in Settings</a>
          </p>
        </>
      ) : null}
    </Card>
  );
}

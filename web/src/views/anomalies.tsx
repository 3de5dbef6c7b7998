// Cost anomalies (issue 44): the resources and types whose cost changed
// unusually at the last scan, and each type's cost history in brief;
// sortable, filterable, and exportable as CSV as shown.
import { useMemo, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { get } from "../api/client";
import {
  HISTORY_CSV,
  NODE_CSV,
  pct,
  signedMoney,
  sparkPoints,
  TYPE_CSV,
  useDebounced,
  type NodeAnomaly,
  type TypeAnomaly,
  type TypeHistory,
} from "../lib/anomalies";
import { download, toCsv } from "../lib/csv";
import { money, num } from "../lib/format";
import { Card, ErrorBox, Loading, sortRows, Table, useAsync, type SortState, type TableColumn } from "../lib/ui";
import { explorerOfType } from "../lib/waste";
import { href } from "../router";

const LIMITS = [100, 250, 500, 1000];

const NODE_COLUMNS: readonly TableColumn<NodeAnomaly>[] = [
  {
    key: "crn",
    header: "Resource",
    cell: (n) => (
      <a class="mono wl-crn" href={href("node", [n.crn])}>
        {n.crn}
      </a>
    ),
    sort: (n) => n.crn,
  },
  { key: "type", header: "Type", cell: (n) => <a href={explorerOfType(n.type)}>{n.type}</a>, sort: (n) => n.type },
  { key: "kind", header: "Change", cell: (n) => n.kind, sort: (n) => n.kind },
  { key: "previous", header: "Before $/mo", cell: (n) => money(n.previous), sort: (n) => n.previous, numeric: true },
  { key: "current", header: "Now $/mo", cell: (n) => money(n.current), sort: (n) => n.current, numeric: true },
  {
    key: "change",
    header: "Change $/mo",
    cell: (n) => <span class={n.direction === "up" ? "an-up" : "an-down"}>{signedMoney(n.change, money)}</span>,
    sort: (n) => n.change,
    numeric: true,
  },
  { key: "pct", header: "Change %", cell: (n) => pct(n.change_pct), sort: (n) => n.change_pct ?? Number.MAX_VALUE, numeric: true },
  { key: "z", header: "z", cell: (n) => n.z.toFixed(1), sort: (n) => Math.abs(n.z), numeric: true },
];

const TYPE_COLUMNS: readonly TableColumn<TypeAnomaly>[] = [
  { key: "type", header: "Type", cell: (t) => <a href={explorerOfType(t.type)}>{t.type}</a>, sort: (t) => t.type },
  { key: "provider", header: "Provider", cell: (t) => t.provider, sort: (t) => t.provider },
  { key: "count", header: "Resources", cell: (t) => `${num(t.previous_count)} → ${num(t.count)}`, sort: (t) => t.count, numeric: true },
  { key: "previous", header: "Before $/mo", cell: (t) => money(t.previous), sort: (t) => t.previous, numeric: true },
  { key: "current", header: "Now $/mo", cell: (t) => money(t.current), sort: (t) => t.current, numeric: true },
  {
    key: "change",
    header: "Change $/mo",
    cell: (t) => <span class={t.direction === "up" ? "an-up" : "an-down"}>{signedMoney(t.change, money)}</span>,
    sort: (t) => t.change,
    numeric: true,
  },
  { key: "pct", header: "Change %", cell: (t) => pct(t.change_pct), sort: (t) => t.change_pct ?? Number.MAX_VALUE, numeric: true },
  { key: "z", header: "z", cell: (t) => t.z.toFixed(1), sort: (t) => Math.abs(t.z), numeric: true },
];

function Spark({ h }: { h: TypeHistory }) {
  const values = h.recent.map((p) => p.cost_usd_mo);
  if (values.length < 2) return <span class="muted">one scan</span>;
  return (
    <svg class="an-spark" width="90" height="22" viewBox="-1 -1 92 24" aria-hidden="true" focusable="false">
      <polyline points={sparkPoints(values, 90, 22)} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  );
}

const HISTORY_COLUMNS: readonly TableColumn<TypeHistory>[] = [
  { key: "type", header: "Type", cell: (h) => <a href={explorerOfType(h.type)}>{h.type}</a>, sort: (h) => h.type },
  { key: "provider", header: "Provider", cell: (h) => h.provider, sort: (h) => h.provider },
  { key: "count", header: "Resources", cell: (h) => num(h.count), sort: (h) => h.count, numeric: true },
  { key: "cost", header: "Cost $/mo", cell: (h) => money(h.cost_usd_mo), sort: (h) => h.cost_usd_mo, numeric: true },
  {
    key: "change",
    header: "Since last scan",
    cell: (h) => (h.change_usd_mo === null ? "–" : signedMoney(h.change_usd_mo, money)),
    sort: (h) => h.change_usd_mo ?? 0,
    numeric: true,
  },
  {
    key: "range",
    header: "Min / mean / max",
    cell: (h) => `${money(h.min_cost_usd_mo)} / ${money(h.mean_cost_usd_mo)} / ${money(h.max_cost_usd_mo)}`,
  },
  { key: "waste", header: "Waste $/mo", cell: (h) => money(h.waste_usd_mo), sort: (h) => h.waste_usd_mo, numeric: true },
  { key: "scans", header: "Scans", cell: (h) => num(h.scans), sort: (h) => h.scans, numeric: true },
  { key: "recent", header: "Last scans", cell: (h) => <Spark h={h} /> },
];

export function Anomalies(_props: ViewProps) {
  const [typeText, setTypeText] = useState("");
  const [provider, setProvider] = useState("");
  const [limit, setLimit] = useState(100);
  const [nodeSort, setNodeSort] = useState<SortState>(null);
  const [typeSort, setTypeSort] = useState<SortState>(null);
  const [historySort, setHistorySort] = useState<SortState>(null);
  const type = useDebounced(typeText.trim(), 300);
  const stats = useAsync((signal) => get("/api/v1/graph/stats", { signal }), []);
  const page = useAsync(
    (signal) => get("/api/v1/anomalies", { query: { limit, type: type || undefined, provider: provider || undefined }, signal }),
    [limit, type, provider],
  );
  const providers = stats.data ? Object.keys(stats.data.providers).sort() : [];
  const a = page.data;
  const nodes = useMemo(() => sortRows(a?.nodes ?? [], NODE_COLUMNS, nodeSort), [a, nodeSort]);
  const types = useMemo(() => sortRows(a?.types ?? [], TYPE_COLUMNS, typeSort), [a, typeSort]);
  const history = useMemo(() => sortRows(a?.history ?? [], HISTORY_COLUMNS, historySort), [a, historySort]);
  const suffix = `${provider ? "-" + provider : ""}${type ? "-" + type.replace(/[^a-z0-9-]+/gi, "_") : ""}`;

  return (
    <div class="an">
      <h1>Anomalies</h1>
      <ErrorBox error={page.error} />
      {a ? (
        <div class="kpis" role="group" aria-label="The analysis">
          <div class="kpi">
            <div class="label">Resource anomalies</div>
            <div class="value" data-testid="node-anomalies">
              {num(a.summary.node_anomalies)}
            </div>
          </div>
          <div class="kpi">
            <div class="label">Type anomalies</div>
            <div class="value">{num(a.summary.type_anomalies)}</div>
          </div>
          <div class="kpi">
            <div class="label">Resources changed</div>
            <div class="value">{num(a.summary.nodes_changed)}</div>
            <div class="muted">of {num(a.summary.nodes_compared)} compared</div>
          </div>
          <div class="kpi">
            <div class="label">Scan</div>
            <div class="value">#{a.scan_seq}</div>
            <div class="muted">
              {a.baseline === "none"
                ? "nothing to compare with yet"
                : `against #${a.previous_scan_seq}${a.baseline === "restart" ? " (before a restart)" : ""}`}
              ; computed {a.generated_at}
            </div>
          </div>
        </div>
      ) : null}
      {a ? (
        <p class="muted an-note">
          An anomaly is a cost change with a robust z-score above {a.thresholds.z} for its type, of at least{" "}
          {money(a.thresholds.min_change_usd_mo)}/mo and {a.thresholds.min_change_pct}% (types: {a.thresholds.type_min_change_pct}% over
          at least {a.thresholds.type_min_changes} recorded scans). Answers are shared for {a.cache_ttl_s} s.
        </p>
      ) : null}
      <form class="toolbar" role="search" aria-label="Filter the anomalies" onSubmit={(e) => e.preventDefault()}>
        <label>
          Type (full, like ec2:volume, or kind, like volume)
          <input
            type="search"
            list="an-types"
            value={typeText}
            onInput={(e) => setTypeText((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <datalist id="an-types">
          {(a?.history ?? []).map((h) => (
            <option key={h.type} value={h.type} />
          ))}
        </datalist>
        <label>
          Provider
          <select value={provider} onChange={(e) => setProvider((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">all providers</option>
            {providers.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <label>
          Rows
          <select value={String(limit)} onChange={(e) => setLimit(Number((e.currentTarget as HTMLSelectElement).value))}>
            {LIMITS.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </label>
      </form>
      {page.loading && !a ? <Loading what="the anomalies" /> : null}
      {a ? (
        <>
          <Card
            title={`Resources (${num(a.nodes.length)} of ${num(a.matching.nodes)})`}
            actions={
              <button type="button" onClick={() => download(`anomalies-resources${suffix}.csv`, toCsv(nodes, NODE_CSV))}>
                Export resources as CSV
              </button>
            }
          >
            <Table
              caption="Resources whose cost changed unusually, highest |z| first"
              columns={NODE_COLUMNS}
              rows={nodes}
              rowKey={(n) => n.crn}
              sort={nodeSort}
              onSort={setNodeSort}
              empty={a.baseline === "none" ? "The first scan has nothing to compare with." : "No resource anomaly."}
            />
          </Card>
          <Card
            title={`Types (${num(a.types.length)} of ${num(a.matching.types)})`}
            actions={
              <button type="button" onClick={() => download(`anomalies-types${suffix}.csv`, toCsv(types, TYPE_CSV))}>
                Export types as CSV
              </button>
            }
          >
            <Table
              caption="Resource types whose total cost changed unusually"
              columns={TYPE_COLUMNS}
              rows={types}
              rowKey={(t) => `${t.provider}/${t.type}`}
              sort={typeSort}
              onSort={setTypeSort}
              empty={`No type anomaly (a type needs ${a.thresholds.type_min_changes} recorded scans).`}
            />
          </Card>
          <Card
            title={`Cost history by type (${num(a.summary.history_scans)} of ${num(a.summary.history_retention_scans)} scans kept)`}
            actions={
              <button type="button" onClick={() => download(`cost-history${suffix}.csv`, toCsv(history, HISTORY_CSV))}>
                Export history as CSV
              </button>
            }
          >
            <Table
              caption="Each resource type's cost over the recorded scans"
              columns={HISTORY_COLUMNS}
              rows={history}
              rowKey={(h) => `${h.provider}/${h.type}`}
              sort={historySort}
              onSort={setHistorySort}
              empty="No scan recorded yet."
            />
          </Card>
        </>
      ) : null}
    </div>
  );
}

// The waste ledger (issue 44): per resource type, how many resources are
// waste or could be cheaper, what the waste costs and what acting on it
// saves, with each type's top resources; sortable, filterable, and
// exportable as CSV as shown.
import { useMemo, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { get } from "../api/client";
import { download, toCsv } from "../lib/csv";
import { money, num, rfc3339 } from "../lib/format";
import { Card, ErrorBox, Loading, sortRows, Table, useAsync, type SortState, type TableColumn } from "../lib/ui";
import {
  explorerOfType,
  filterTop,
  filterTypes,
  TOP_CSV,
  topRows,
  TYPE_CSV,
  type LedgerType,
  type TopRow,
  type Verdict,
} from "../lib/waste";
import { href } from "../router";

const TOPS = [5, 10, 25, 50, 100];

const TYPE_COLUMNS: readonly TableColumn<LedgerType>[] = [
  {
    key: "type",
    header: "Type",
    cell: (t) => <a href={explorerOfType(t.type)}>{t.type}</a>,
    sort: (t) => t.type,
  },
  { key: "provider", header: "Provider", cell: (t) => t.provider, sort: (t) => t.provider },
  { key: "count", header: "Resources", cell: (t) => num(t.count), sort: (t) => t.count, numeric: true },
  { key: "waste_count", header: "Waste", cell: (t) => num(t.waste_count), sort: (t) => t.waste_count, numeric: true },
  { key: "optimize_count", header: "Could be cheaper", cell: (t) => num(t.optimize_count), sort: (t) => t.optimize_count, numeric: true },
  { key: "waste_usd_mo", header: "Waste $/mo", cell: (t) => money(t.waste_usd_mo), sort: (t) => t.waste_usd_mo, numeric: true },
  {
    key: "savings",
    header: "Projected savings $/mo",
    cell: (t) => money(t.projected_savings_usd_mo),
    sort: (t) => t.projected_savings_usd_mo,
    numeric: true,
  },
];

const TOP_COLUMNS: readonly TableColumn<TopRow>[] = [
  {
    key: "crn",
    header: "Resource",
    cell: (r) => (
      <a class="mono wl-crn" href={href("node", [r.crn])}>
        {r.crn}
      </a>
    ),
    sort: (r) => r.crn,
  },
  { key: "type", header: "Type", cell: (r) => <a href={explorerOfType(r.type)}>{r.type}</a>, sort: (r) => r.type },
  {
    key: "verdict",
    header: "Verdict",
    cell: (r) => (r.is_waste ? <span class="badge waste">waste</span> : <span class="badge warn">optimize</span>),
    sort: (r) => (r.is_waste ? 1 : 0),
  },
  {
    key: "savings",
    header: "Savings $/mo",
    cell: (r) => money(r.projected_savings_usd_mo),
    sort: (r) => r.projected_savings_usd_mo,
    numeric: true,
  },
  { key: "risk", header: "Risk", cell: (r) => r.risk_score, sort: (r) => r.risk_score, numeric: true },
  { key: "rule", header: "Rule", cell: (r) => r.rule, sort: (r) => r.rule },
  { key: "reason", header: "Why", cell: (r) => r.reason },
  { key: "action", header: "Suggested", cell: (r) => r.suggested_action },
];

export function Waste(_props: ViewProps) {
  const [provider, setProvider] = useState("");
  const [top, setTop] = useState(10);
  const [typeText, setTypeText] = useState("");
  const [verdict, setVerdict] = useState<Verdict>("all");
  const [typeSort, setTypeSort] = useState<SortState>(null);
  const [topSort, setTopSort] = useState<SortState>(null);
  const stats = useAsync((signal) => get("/api/v1/graph/stats", { signal }), []);
  const ledger = useAsync(
    (signal) => get("/api/v1/waste-ledger", { query: { top, provider: provider || undefined }, signal }),
    [top, provider],
  );
  const providers = stats.data ? Object.keys(stats.data.providers).sort() : [];

  const types = useMemo(
    () => sortRows(filterTypes(ledger.data?.types ?? [], typeText), TYPE_COLUMNS, typeSort),
    [ledger.data, typeText, typeSort],
  );
  const tops = useMemo(() => sortRows(filterTop(topRows(types), verdict), TOP_COLUMNS, topSort), [types, verdict, topSort]);
  const l = ledger.data;
  const suffix = provider ? `-${provider}` : "";

  return (
    <div class="wl">
      <h1>Waste ledger</h1>
      <ErrorBox error={ledger.error} />
      {l ? (
        <div class="kpis" role="group" aria-label="Totals">
          <div class="kpi">
            <div class="label">Resources flagged</div>
            <div class="value" data-testid="total-flagged">
              {num(l.totals.flagged)}
            </div>
          </div>
          <div class="kpi">
            <div class="label">Waste $/mo</div>
            <div class="value" data-testid="total-waste">
              {money(l.totals.waste_usd_mo)}
            </div>
          </div>
          <div class="kpi">
            <div class="label">Projected savings $/mo</div>
            <div class="value" data-testid="total-savings">
              {money(l.totals.projected_savings_usd_mo)}
            </div>
          </div>
          <div class="kpi">
            <div class="label">From scan</div>
            <div class="value">#{l.scan_seq}</div>
            <div class="muted">
              observed {l.observed_at ? rfc3339(l.observed_at) : "never"}; prices {l.price_table}
            </div>
          </div>
        </div>
      ) : null}
      <form class="toolbar" role="search" aria-label="Filter the ledger" onSubmit={(e) => e.preventDefault()}>
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
          Type contains
          <input type="search" value={typeText} onInput={(e) => setTypeText((e.currentTarget as HTMLInputElement).value)} />
        </label>
        <label>
          Top resources per type
          <select value={String(top)} onChange={(e) => setTop(Number((e.currentTarget as HTMLSelectElement).value))}>
            {TOPS.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
      </form>
      {ledger.loading && !l ? <Loading what="the waste ledger" /> : null}
      {l ? (
        <>
          <Card
            title={`By type (${num(types.length)})`}
            actions={
              <button type="button" onClick={() => download(`waste-ledger-types${suffix}.csv`, toCsv(types, TYPE_CSV))}>
                Export types as CSV
              </button>
            }
          >
            <Table
              caption="Waste and projected savings by resource type"
              columns={TYPE_COLUMNS}
              rows={types}
              rowKey={(t) => `${t.provider}/${t.type}`}
              sort={typeSort}
              onSort={setTypeSort}
              empty="No type has a finding."
            />
          </Card>
          <Card
            title={`Top resources (${num(tops.length)})`}
            actions={
              <>
                <label class="inline">
                  Verdict{" "}
                  <select value={verdict} onChange={(e) => setVerdict((e.currentTarget as HTMLSelectElement).value as Verdict)}>
                    <option value="all">all</option>
                    <option value="waste">waste</option>
                    <option value="optimize">optimize</option>
                  </select>
                </label>
                <button type="button" onClick={() => download(`waste-ledger-top${suffix}.csv`, toCsv(tops, TOP_CSV))}>
                  Export resources as CSV
                </button>
              </>
            }
          >
            <p class="muted wl-note">
              The {top} largest savings of each type listed above; the counts in the type table cover every resource.
            </p>
            <Table
              caption="The resources with the largest savings of each type"
              columns={TOP_COLUMNS}
              rows={tops}
              rowKey={(r) => r.crn}
              sort={topSort}
              onSort={setTopSort}
              empty="No resource to show."
            />
          </Card>
        </>
      ) : null}
    </div>
  );
}

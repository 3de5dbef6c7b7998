// Terraform (issue 47): the estate against its Terraform states. Which
// declared resources are gone, which changed outside Terraform, which live
// resources no state declares; each with its address and what to change.
import type { ViewProps } from ".";
import { get } from "../api/client";
import { money, num } from "../lib/format";
import { attributeLine, cutNote, type DriftReport, totalFigures } from "../lib/terraform";
import { Card, ErrorBox, Loading, Table, type TableColumn, useAsync } from "../lib/ui";
import { href } from "../router";

/** Resources listed in each part. */
const LIMIT = 100;

type Gone = DriftReport["gone"][number];
type Changed = DriftReport["changed"][number];
type Unmanaged = DriftReport["unmanaged"][number];
type State = DriftReport["states"][number];

function CrnLink({ crn }: { crn: string }) {
  return (
    <a class="mono" href={href("node", [crn])} title={crn}>
      {crn}
    </a>
  );
}

const STATE_COLUMNS: readonly TableColumn<State>[] = [
  { key: "source", header: "State", cell: (s) => <span class="mono">{s.source}</span> },
  { key: "serial", header: "Serial", cell: (s) => (s.error ? "–" : num(s.serial)), numeric: true },
  { key: "version", header: "Terraform", cell: (s) => s.terraform_version || "–" },
  { key: "resources", header: "Resources", cell: (s) => num(s.resources), numeric: true },
  { key: "error", header: "Error", cell: (s) => (s.error ? <span class="bad">{s.error}</span> : "") },
];

const GONE_COLUMNS: readonly TableColumn<Gone>[] = [
  { key: "address", header: "Address", cell: (g) => <span class="mono">{g.address}</span>, sort: (g) => g.address },
  { key: "crn", header: "Resource", cell: (g) => (g.crn ? <CrnLink crn={g.crn} /> : "–") },
  {
    key: "by",
    header: "Removed by",
    cell: (g) => (g.removed_by_svc ? <span class="badge good">svc</span> : <span class="badge bad">outside Terraform</span>),
    sort: (g) => (g.removed_by_svc ? 1 : 0),
  },
  { key: "change", header: "Code change", cell: (g) => g.code_change.summary },
];

const CHANGED_COLUMNS: readonly TableColumn<Changed>[] = [
  { key: "address", header: "Address", cell: (c) => <span class="mono">{c.address}</span>, sort: (c) => c.address },
  { key: "crn", header: "Resource", cell: (c) => <CrnLink crn={c.crn} /> },
  {
    key: "attributes",
    header: "Declared → live",
    cell: (c) => (
      <ul class="tf-attributes">
        {c.attributes.map((a) => (
          <li key={a.attribute} class="mono">
            {attributeLine(a)}
          </li>
        ))}
      </ul>
    ),
    sort: (c) => c.attributes.length,
  },
];

const UNMANAGED_COLUMNS: readonly TableColumn<Unmanaged>[] = [
  { key: "cost", header: "Cost $/mo", cell: (u) => money(u.cost_usd_mo), sort: (u) => u.cost_usd_mo, numeric: true },
  { key: "terraform_type", header: "Terraform type", cell: (u) => <span class="mono">{u.terraform_type}</span>, sort: (u) => u.terraform_type },
  { key: "crn", header: "Resource", cell: (u) => <CrnLink crn={u.crn} />, sort: (u) => u.crn },
];

export function Terraform(_props: ViewProps) {
  const report = useAsync((signal) => get("/api/v1/drift/report", { query: { limit: LIMIT }, signal }), []);
  const r = report.data;
  return (
    <div class="terraform">
      <h1>Terraform</h1>
      <ErrorBox error={report.error} />
      {!r && report.loading ? <Loading what="the drift report" /> : null}
      {r && !r.configured ? (
        <Card title="Not configured">
          <p data-testid="tf-unconfigured">
            No Terraform state is configured. Set <code>iac.terraform_states</code> (state files, or <code>s3://</code> objects) and{" "}
            <code>iac.repository</code> (the git repository of the code) in Settings or <code>config.toml</code>.
          </p>
        </Card>
      ) : null}
      {r && r.configured ? (
        <>
          <div class="kpis" role="group" aria-label="Drift totals">
            {totalFigures(r.totals).map((f) => (
              <div key={f.key} class="kpi">
                <div class="label">{f.label}</div>
                <div class="value" data-testid={`tf-${f.key}`}>
                  {num(f.value)}
                </div>
              </div>
            ))}
          </div>
          <Card title="States">
            <Table columns={STATE_COLUMNS} rows={r.states} rowKey={(s) => s.source} caption="Terraform states" />
            {r.repository ? (
              <p class="muted">
                Repository <span class="mono">{r.repository.path}</span>
                {r.repository.head ? (
                  <>
                    {" "}
                    at <span class="mono">{r.repository.head.slice(0, 12)}</span>
                  </>
                ) : null}
                {r.repository.error ? <span class="bad"> — {r.repository.error}</span> : null}
              </p>
            ) : null}
          </Card>
          <Card title="Gone from the estate">
            <p class="muted">{cutNote(r.gone.length, r.totals.gone)}</p>
            <Table columns={GONE_COLUMNS} rows={r.gone} rowKey={(g) => g.address} caption="Declared resources gone from the estate" empty="Every declared resource is live." />
          </Card>
          <Card title="Changed outside Terraform">
            <p class="muted">{cutNote(r.changed.length, r.totals.changed)}</p>
            <Table columns={CHANGED_COLUMNS} rows={r.changed} rowKey={(c) => c.address} caption="Resources whose live attributes differ from the state" empty="No live attribute differs from its state." />
          </Card>
          <Card title="Not declared by any state">
            <p class="muted">{cutNote(r.unmanaged.length, r.totals.unmanaged)}</p>
            <Table columns={UNMANAGED_COLUMNS} rows={r.unmanaged} rowKey={(u) => u.crn} caption="Live resources no state declares" empty="Every live resource of these accounts is declared." />
          </Card>
        </>
      ) : null}
    </div>
  );
}

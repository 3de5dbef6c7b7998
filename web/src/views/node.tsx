// A resource's page (`#/node/<crn>`): what the graph knows of it, its
// neighbours, what its removal would break, the proof of its reachability,
// its remediation plan, its ledger events, and its versions through time
// with the difference between any two of them.
import type { ComponentChildren } from "preact";
import { useMemo, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { ApiError, get, post } from "../api/client";
import type { Schemas } from "../api/types";
import { useCan } from "../context";
import { money, num, parseDuration, relative, rfc3339, shortCrn } from "../lib/format";
import {
  countChanges,
  diffVersions,
  instantText,
  microsToSeconds,
  type Node,
  type NodeVersions,
  parseInstant,
  terraformStatus,
  valueText,
  versionAt,
} from "../lib/node";
import { Card, Confirm, ErrorBox, Loading, Table, type TableColumn, useAsync } from "../lib/ui";
import { href } from "../router";

/** Most edges listed in each direction, blast-radius nodes and versions shown. */
const EDGE_LIMIT = 200;
const BLAST_LIMIT = 200;
const VERSION_LIMIT = 100;
const HISTORY_LIMIT = 50;

export function NodePage({ route }: ViewProps) {
  const crn = route.rest.join("/");
  if (!crn) {
    return (
      <>
        <h1>Resource</h1>
        <div class="error" role="alert">
          No resource named: open one from the <a href={href("explorer")}>Explorer</a>.
        </div>
      </>
    );
  }
  // Keyed by CRN: moving to a neighbour starts every section afresh.
  return <NodeBody key={crn} crn={crn} />;
}

function NodeBody({ crn }: { crn: string }) {
  const node = useAsync((signal) => get("/api/v1/graph/nodes/{crn}", { params: { crn }, signal }), [crn]);
  if (node.error) {
    return (
      <>
        <h1 class="mono node-title">{shortCrn(crn)}</h1>
        <p class="mono muted node-crn">{crn}</p>
        <ErrorBox error={node.error} />
        <p>
          <a href={href("explorer")}>Back to the Explorer</a>
        </p>
      </>
    );
  }
  if (!node.data) {
    return (
      <>
        <h1 class="mono node-title">{shortCrn(crn)}</h1>
        <Loading what="the resource" />
      </>
    );
  }
  const n = node.data;
  return (
    <div class="node-page">
      <Header node={n} />
      <div class="node-grid">
        <Summary node={n} />
        <Tags node={n} />
      </div>
      <Findings node={n} />
      <Properties node={n} />
      <Edges crn={n.crn} />
      <Blast crn={n.crn} />
      <Oracle crn={n.crn} />
      <Terraform crn={n.crn} />
      <Versions crn={n.crn} />
      <Ledger crn={n.crn} />
    </div>
  );
}

function Header({ node }: { node: Schemas["NodeDetail"] }) {
  const operator = useCan("operator");
  // Only a resource in the pipeline (a phase) has a plan; a 404 still
  // means none (it may have left the pipeline since).
  const plan = useAsync(
    (signal) =>
      node.phase
        ? get("/api/v1/plan", { query: { crn: node.crn }, signal }).catch((e: unknown) => {
            if (e instanceof ApiError && e.status === 404) return null;
            throw e;
          })
        : Promise.resolve(null),
    [node.crn, node.phase],
  );
  const isolation = useAsync((signal) => get("/api/v1/isolation", { signal }), [node.crn]);
  const ignored = isolation.data?.entries?.find((e) => e.crn === node.crn) ?? null;
  const [asking, setAsking] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  return (
    <header class="node-header">
      <div>
        <h1 class="mono node-title" title={node.crn}>
          {shortCrn(node.crn)}
        </h1>
        <p class="mono muted node-crn">{node.crn}</p>
        <p class="node-badges">
          <span class="badge">{node.type}</span>
          {node.is_waste ? <span class="badge waste">waste</span> : <span class="badge good">in use</span>}
          {node.valid_to !== 0 ? <span class="badge bad">deleted {rfc3339(microsToSeconds(node.valid_to))}</span> : null}
          {node.phase ? <span class="badge warn">{node.phase}</span> : null}
          {ignored ? (
            <span class="badge" data-testid="node-ignored">
              ignored{ignored.expires_at ? ` until ${rfc3339(ignored.expires_at)}` : " permanently"}
            </span>
          ) : null}
        </p>
        {node.is_waste && node.waste_reason ? <p class="node-reason">{node.waste_reason}</p> : null}
      </div>
      <div class="node-actions">
        {plan.data ? (
          <p class="node-plan">
            In remediation: stage <strong>{plan.data.stage}</strong>, {plan.data.intent}, saves {money(plan.data.savings_usd_mo)}/mo
            {operator ? (
              <>
                {" · "}
                <a href={href("remediation", [], { crn: node.crn })}>Open its remediation item</a>
              </>
            ) : null}
          </p>
        ) : null}
        <ErrorBox error={plan.error} />
        {operator ? (
          <button type="button" onClick={() => { setDone(null); setAsking(true); }}>
            Ignore…
          </button>
        ) : null}
        {done ? (
          <p class="notice" role="status">
            {done}
          </p>
        ) : null}
      </div>
      {asking ? (
        <IgnoreDialog
          crn={node.crn}
          onDone={(msg) => {
            setAsking(false);
            setDone(msg);
            isolation.reload();
          }}
          onCancel={() => setAsking(false)}
        />
      ) : null}
    </header>
  );
}

function IgnoreDialog({ crn, onDone, onCancel }: { crn: string; onDone: (message: string) => void; onCancel: () => void }) {
  const [reason, setReason] = useState("");
  const [ttl, setTtl] = useState("7d");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const seconds = parseDuration(ttl);
  const submit = () => {
    if (!reason.trim()) {
      setError(new Error("Say why this resource is ignored."));
      return;
    }
    if (seconds === null) {
      setError(new Error(`“${ttl}” is not a duration: write 12h, 7d, 2w, or 0 for permanent.`));
      return;
    }
    setBusy(true);
    setError(null);
    post("/api/v1/isolation", { crn, reason_code: reason.trim(), ttl_seconds: seconds }).then(
      (entry) => onDone(entry.expires_at ? `Ignored until ${rfc3339(entry.expires_at)}.` : "Ignored permanently."),
      (e: unknown) => {
        setBusy(false);
        setError(e instanceof Error ? e : new Error(String(e)));
      },
    );
  };
  return (
    <Confirm title="Ignore this resource" confirmLabel="Ignore" busy={busy} onConfirm={submit} onCancel={onCancel}>
      <p class="mono node-crn">{crn}</p>
      <p class="muted">An ignored resource leaves the remediation pipeline and does not come back to it until the entry expires.</p>
      <div class="node-form">
        <label>
          Reason
          <textarea rows={3} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
        </label>
        <label>
          For how long (12h, 7d, 2w; 0 for permanent)
          <input value={ttl} onInput={(e) => setTtl(e.currentTarget.value)} aria-invalid={seconds === null} />
        </label>
      </div>
      <ErrorBox error={error} />
    </Confirm>
  );
}

function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function Summary({ node }: { node: Schemas["NodeDetail"] }) {
  const created = node.creation_timestamp;
  const since = microsToSeconds(node.valid_from);
  return (
    <Card title="Summary">
      <dl class="node-facts">
        <Fact label="Provider">{node.provider}</Fact>
        <Fact label="Service / kind">
          {node.service} / {node.kind}
        </Fact>
        <Fact label="Account">
          <span class="mono">{node.account}</span>
        </Fact>
        <Fact label="Region">{node.region}</Fact>
        <Fact label="Physical id">
          <span class="mono">{node.physical_id}</span>
        </Fact>
        <Fact label="State">{node.state || "–"}</Fact>
        <Fact label="Monthly cost">{money(node.cost_usd_mo)}</Fact>
        <Fact label="Risk score">{num(Math.round(node.risk_score))}</Fact>
        <Fact label="Reachability">{node.reachability}</Fact>
        <Fact label="Verdict">{node.verdict || "–"}</Fact>
        <Fact label="Phase">{node.phase || "–"}</Fact>
        <Fact label="Edges">
          <span data-testid="node-edges-out">{num(node.edges_out)}</span> out, <span data-testid="node-edges-in">{num(node.edges_in)}</span> in
        </Fact>
        <Fact label="Created">{created > 0 ? <When seconds={created} /> : "–"}</Fact>
        <Fact label="This version since">
          <When seconds={since} />
        </Fact>
      </dl>
    </Card>
  );
}

/** A time as "3 d ago" with its RFC 3339 form. */
function When({ seconds }: { seconds: number }) {
  const text = rfc3339(seconds);
  return (
    <time dateTime={text} title={text}>
      {relative(seconds)} <span class="muted">({text})</span>
    </time>
  );
}

type Finding = Schemas["Finding"];
const FINDING_COLUMNS: readonly TableColumn<Finding>[] = [
  { key: "rule", header: "Rule", cell: (f) => <span class="mono">{f.rule}</span> },
  { key: "waste", header: "Waste", cell: (f) => (f.is_waste ? <span class="badge waste">waste</span> : <span class="muted">no</span>) },
  { key: "reason", header: "Reason", cell: (f) => f.reason },
  { key: "action", header: "Suggested action", cell: (f) => f.suggested_action || "–" },
  { key: "savings", header: "Savings/mo", numeric: true, cell: (f) => money(f.projected_savings_usd_mo), sort: (f) => f.projected_savings_usd_mo },
  { key: "risk", header: "Risk", numeric: true, cell: (f) => num(f.risk_score), sort: (f) => f.risk_score },
  { key: "source", header: "Source", cell: (f) => f.source },
];

function Findings({ node }: { node: Schemas["NodeDetail"] }) {
  return (
    <Card title="Findings">
      {node.findings.length === 0 ? (
        <p class="muted">The last scan found nothing about this resource.</p>
      ) : (
        <Table columns={FINDING_COLUMNS} rows={node.findings} rowKey={(f) => `${f.source}/${f.rule}`} caption="Findings of the last scan, the deciding one first" />
      )}
    </Card>
  );
}

function Properties({ node }: { node: Schemas["NodeDetail"] }) {
  const props = Object.keys(node.properties).sort();
  return (
    <Card title="Properties">
      {props.length === 0 ? (
        <p class="muted">No properties.</p>
      ) : (
        <table class="table node-kv" data-testid="node-properties">
          <caption class="sr-only">Properties</caption>
          <thead>
            <tr>
              <th scope="col">Property</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            {props.map((k) => (
              <tr key={k}>
                <th scope="row" class="mono">
                  {k}
                </th>
                <td class="mono">{valueText(node.properties[k])}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Card>
  );
}

function Tags({ node }: { node: Schemas["NodeDetail"] }) {
  const tags = Object.keys(node.tags).sort();
  return (
    <Card title="Tags">
      {tags.length === 0 ? (
        <p class="muted">No tags.</p>
      ) : (
        <ul class="node-tags">
          {tags.map((k) => (
            <li key={k}>
              <a class="badge mono" href={href("explorer", [], { tag: `${k}=${node.tags[k] ?? ""}` })} title="Nodes with this tag">
                {k}={node.tags[k]}
              </a>
            </li>
          ))}
        </ul>
      )}
    </Card>
  );
}

/** A link to another node's page, its CRN short with the full one as title. */
function NodeLink({ crn }: { crn: string }) {
  return (
    <a class="mono" href={href("node", [crn])} title={crn}>
      {shortCrn(crn)}
    </a>
  );
}

type EdgeRow = Schemas["Edge"] & { direction: "out" | "in" };
const EDGE_COLUMNS: readonly TableColumn<EdgeRow>[] = [
  { key: "dir", header: "Direction", cell: (e) => (e.direction === "out" ? "→ outgoing" : "← incoming"), sort: (e) => e.direction },
  { key: "relation", header: "Relation", cell: (e) => e.type, sort: (e) => e.type },
  {
    key: "neighbour",
    header: "Neighbour",
    cell: (e) => <NodeLink crn={e.direction === "out" ? e.target_crn : e.source_crn} />,
    sort: (e) => (e.direction === "out" ? e.target_crn : e.source_crn),
  },
  { key: "inferred", header: "Origin", cell: (e) => (e.inferred ? "inferred" : "reported") },
];

function Edges({ crn }: { crn: string }) {
  const edges = useAsync((signal) => get("/api/v1/graph/nodes/{crn}/edges", { params: { crn }, query: { limit: EDGE_LIMIT }, signal }), [crn]);
  const rows = useMemo<EdgeRow[]>(
    () =>
      edges.data
        ? [
            ...edges.data.outgoing.map((e) => ({ ...e, direction: "out" as const })),
            ...edges.data.incoming.map((e) => ({ ...e, direction: "in" as const })),
          ]
        : [],
    [edges.data],
  );
  const d = edges.data;
  return (
    <Card title="Edges">
      <ErrorBox error={edges.error} />
      {!d && edges.loading ? <Loading what="edges" /> : null}
      {d ? (
        <>
          <p>
            <strong data-testid="edges-total">{num(d.outgoing_total + d.incoming_total)}</strong> {d.outgoing_total + d.incoming_total === 1 ? "edge" : "edges"}:{" "}
            {num(d.outgoing_total)} outgoing,{" "}
            {num(d.incoming_total)} incoming{d.truncated ? `; the first ${num(EDGE_LIMIT)} each way are listed` : ""}.
          </p>
          {rows.length > 0 ? (
            <Table columns={EDGE_COLUMNS} rows={rows} rowKey={(e) => `${e.direction} ${e.type} ${e.source_crn} ${e.target_crn}`} caption="Edges to and from this resource" />
          ) : null}
        </>
      ) : null}
    </Card>
  );
}

type Affected = Schemas["AffectedNode"];
const BLAST_COLUMNS: readonly TableColumn<Affected>[] = [
  { key: "depth", header: "Depth", numeric: true, cell: (a) => num(a.depth), sort: (a) => a.depth },
  { key: "crn", header: "Resource", cell: (a) => <NodeLink crn={a.crn} />, sort: (a) => a.crn },
  { key: "type", header: "Type", cell: (a) => a.type, sort: (a) => a.type },
  { key: "relation", header: "Relation", cell: (a) => a.relation, sort: (a) => a.relation },
  { key: "via", header: "Via", cell: (a) => <NodeLink crn={a.via_crn} /> },
  { key: "cost", header: "Monthly cost", numeric: true, cell: (a) => money(a.cost_usd_mo), sort: (a) => a.cost_usd_mo },
];

function Blast({ crn }: { crn: string }) {
  const blast = useAsync((signal) => get("/api/v1/graph/blast-radius/{crn}", { params: { crn }, query: { limit: BLAST_LIMIT }, signal }), [crn]);
  const b = blast.data;
  return (
    <Card title="Blast radius">
      <ErrorBox error={blast.error} />
      {!b && blast.loading ? <Loading what="the blast radius" /> : null}
      {b ? (
        <>
          <p>
            Removing it affects <strong data-testid="blast-count">{num(b.affected_count)}</strong> {b.affected_count === 1 ? "resource" : "resources"}
            {b.affected_count > 0 ? (
              <>
                , up to {num(b.max_depth)} {b.max_depth === 1 ? "hop" : "hops"} away, costing {money(b.total_cost_usd_mo)}/mo together
              </>
            ) : null}
            {b.truncated ? `; the first ${num(b.affected.length)} are listed` : ""}.
          </p>
          {b.affected.length > 0 ? <Table columns={BLAST_COLUMNS} rows={b.affected} rowKey={(a) => a.crn} caption="Resources affected by its removal, nearest first" /> : null}
        </>
      ) : null}
    </Card>
  );
}

function Oracle({ crn }: { crn: string }) {
  const oracle = useAsync((signal) => get("/api/v1/oracle/{crn}", { params: { crn }, signal }), [crn]);
  const o = oracle.data;
  return (
    <Card title="Reachability proof">
      <ErrorBox error={oracle.error} />
      {!o && oracle.loading ? <Loading what="the proof" /> : null}
      {o ? (
        <>
          <dl class="node-facts">
            <Fact label="Reachability">
              <span class={`badge ${o.reachability === "reachable" ? "good" : o.reachability === "unreachable" ? "bad" : ""}`} data-testid="oracle-reachability">
                {o.reachability}
              </span>
            </Fact>
            <Fact label="Verdict">{o.verdict ?? "none"}</Fact>
            <Fact label="Entry point">{o.entry_point ? "this resource is one" : o.entry_crn ? <NodeLink crn={o.entry_crn} /> : "–"}</Fact>
            <Fact label="Risk score">{num(Math.round(o.risk_score))}</Fact>
            <Fact label="Scan">#{num(o.scan_seq)}</Fact>
            {o.spot ? (
              <Fact label="Spot interruption">
                {o.spot.interruption_frequency} (band {o.spot.interruption_band}, {o.spot.basis})
              </Fact>
            ) : null}
          </dl>
          {!o.enabled ? <p class="notice">The reachability oracle is turned off in the configuration.</p> : null}
          {!o.visible ? <p class="notice">This resource is deleted: it has no proof.</p> : null}
          {o.proof.length > 0 ? (
            <>
              <h3 class="node-sub">Proof, from the entry point</h3>
              <ol class="node-proof" data-testid="oracle-proof">
                {o.proof.map((s, i) => (
                  <li key={i}>
                    <NodeLink crn={s.from} /> <span class="node-rel">— {s.relation}{s.inferred ? " (inferred)" : ""} →</span> <NodeLink crn={s.to} />
                  </li>
                ))}
              </ol>
            </>
          ) : o.enabled && o.visible ? (
            <p class="muted">
              No proof path: {o.entry_point ? "it is an entry point itself." : o.reachability === "reachable" ? "none was recorded." : "no entry point reaches it."}
            </p>
          ) : null}
          <h3 class="node-sub">Parts of the risk score</h3>
          <table class="table node-risk">
            <caption class="sr-only">Parts of the risk score</caption>
            <thead>
              <tr>
                {(["reachability", "entry_point", "blast_radius", "stateful", "cost", "spot", "total"] as const).map((k) => (
                  <th key={k} scope="col" class="num">
                    {k.replace("_", " ")}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              <tr>
                {(["reachability", "entry_point", "blast_radius", "stateful", "cost", "spot", "total"] as const).map((k) => (
                  <td key={k} class="num">
                    {o.risk[k].toFixed(1)}
                  </td>
                ))}
              </tr>
            </tbody>
          </table>
        </>
      ) : null}
    </Card>
  );
}

function Terraform({ crn }: { crn: string }) {
  const drift = useAsync((signal) => get("/api/v1/drift/report", { query: { crn }, signal }), [crn]);
  const r = drift.data;
  const status = r ? terraformStatus(r) : null;
  const p = r?.provenance;
  return (
    <Card title="Terraform">
      <ErrorBox error={drift.error} />
      {!r && drift.loading ? <Loading what="the Terraform states" /> : null}
      {status?.kind === "unconfigured" ? (
        <p class="muted" data-testid="terraform-status">
          No Terraform state is configured: set <code>iac.terraform_states</code> (and <code>iac.repository</code> for who wrote what) in Settings.
        </p>
      ) : null}
      {status?.kind === "unmanaged" ? (
        <p data-testid="terraform-status">No configured Terraform state declares this resource: it was made outside Terraform, or by code svc is not pointed at.</p>
      ) : null}
      {status && status.kind !== "unconfigured" && status.kind !== "unmanaged" && p ? (
        <>
          <dl class="node-facts">
            <Fact label="Address">
              <span class="mono" data-testid="terraform-address">
                {p.address}
              </span>
            </Fact>
            <Fact label="State">
              <span class="mono">{p.state}</span>
            </Fact>
            <Fact label="Declared in">{p.file ? <span class="mono">{`${p.file}:${p.line}`}</span> : "–"}</Fact>
            <Fact label="Written by">{p.author ? `${p.author} <${p.email}>` : "–"}</Fact>
            <Fact label="Commit">
              {p.commit ? (
                <span title={p.commit}>
                  <span class="mono">{p.commit.slice(0, 12)}</span> {p.summary}
                  {p.time ? ` (${rfc3339(p.time)})` : ""}
                </span>
              ) : (
                "–"
              )}
            </Fact>
            <Fact label="Drift">
              <span class={`badge ${status.kind === "in_sync" ? "good" : "bad"}`} data-testid="terraform-status">
                {status.kind === "in_sync" ? "in sync" : status.kind === "changed" ? `${status.attributes.length} changed` : status.removedBySvc ? "removed by svc" : "gone"}
              </span>
            </Fact>
          </dl>
          {p.missing ? <p class="notice">{p.missing}</p> : null}
          {status.kind === "changed" ? (
            <table class="table">
              <caption class="sr-only">Attributes whose live value differs from the state</caption>
              <thead>
                <tr>
                  <th scope="col">Attribute</th>
                  <th scope="col">Declared</th>
                  <th scope="col">Live</th>
                </tr>
              </thead>
              <tbody>
                {status.attributes.map((a) => (
                  <tr key={a.attribute}>
                    <td class="mono">{a.attribute}</td>
                    <td class="mono">{valueText(a.declared)}</td>
                    <td class="mono">{valueText(a.live)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {status.kind === "gone" && r?.gone[0] ? <p>{r.gone[0].code_change.summary}</p> : null}
        </>
      ) : null}
    </Card>
  );
}

function Versions({ crn }: { crn: string }) {
  const versions = useAsync(
    async (signal) => {
      return get("/api/v1/graph/nodes/{crn}/versions", { params: { crn }, query: { limit: VERSION_LIMIT }, signal });
    },
    [crn],
  );
  const v = versions.data;
  return (
    <Card title="Versions through time">
      <ErrorBox error={versions.error} />
      {!v && versions.loading ? <Loading what="versions" /> : null}
      {v ? <VersionsBody data={v} /> : null}
    </Card>
  );
}

/** A version's label: its number (1 the oldest) and when it began. */
function versionLabel(v: Node, number: number): string {
  return `v${number} · ${instantText(v.valid_from)}${v.valid_to === 0 ? " · current" : ""}`;
}

function VersionsBody({ data }: { data: NodeVersions }) {
  // Newest first, as the API gives them; numbered from the oldest stored.
  const list = data.versions;
  const numberOf = (i: number) => data.total - i;
  const [from, setFrom] = useState(Math.min(1, list.length - 1));
  const [to, setTo] = useState(0);
  const [fromText, setFromText] = useState("");
  const [toText, setToText] = useState("");
  const [instantError, setInstantError] = useState<string | null>(null);
  const changesFromPrevious = useMemo(() => list.map((ver, i) => (i + 1 < list.length ? diffVersions(list[i + 1] as Node, ver).length : null)), [list]);

  if (list.length === 0) return <p class="muted">No stored version.</p>;
  const a = list[from];
  const b = list[to];

  const compareInstants = () => {
    const ta = parseInstant(fromText);
    const tb = parseInstant(toText);
    if (ta === null || tb === null) {
      setInstantError("Write both instants in UTC, as 2026-11-29T13:00:00Z or 2026-11-29 13:00.");
      return;
    }
    const va = versionAt(list, ta);
    const vb = versionAt(list, tb);
    const missing = [!va ? instantText(ta) : null, !vb ? instantText(tb) : null].filter(Boolean);
    if (!va || !vb) {
      setInstantError(`No stored version was valid at ${missing.join(" nor at ")}.`);
      return;
    }
    setInstantError(null);
    setFrom(list.indexOf(va));
    setTo(list.indexOf(vb));
  };

  return (
    <>
      <p>
        <strong data-testid="versions-total">{num(data.total)}</strong> {data.total === 1 ? "version" : "versions"} stored
        {data.total > list.length ? `; the newest ${num(list.length)} are shown` : ""}.
      </p>
      <ol class="node-timeline" aria-label="Versions, newest first" data-testid="versions-timeline">
        {list.map((ver, i) => {
          const changes = changesFromPrevious[i];
          return (
            <li key={ver.valid_from}>
              <div>
                <strong>v{numberOf(i)}</strong> <When seconds={microsToSeconds(ver.valid_from)} />
                {ver.valid_to === 0 ? (
                  <span class="badge good">current</span>
                ) : (
                  <span class="muted">
                    {" "}
                    until <When seconds={microsToSeconds(ver.valid_to)} />
                  </span>
                )}
              </div>
              <div class="muted">
                {ver.state || "no state"} · {money(ver.cost_usd_mo)}/mo · {ver.is_waste ? "waste" : "not waste"}
                {changes !== null ? ` · ${changes === 0 ? "no change" : `${changes} ${changes === 1 ? "change" : "changes"}`} from v${numberOf(i + 1)}` : ""}
              </div>
            </li>
          );
        })}
      </ol>

      <h3 class="node-sub">Compare two instants</h3>
      <div class="toolbar">
        <label>
          From version
          <select value={String(from)} onChange={(e) => setFrom(Number(e.currentTarget.value))}>
            {list.map((ver, i) => (
              <option key={ver.valid_from} value={String(i)}>
                {versionLabel(ver, numberOf(i))}
              </option>
            ))}
          </select>
        </label>
        <label>
          To version
          <select value={String(to)} onChange={(e) => setTo(Number(e.currentTarget.value))}>
            {list.map((ver, i) => (
              <option key={ver.valid_from} value={String(i)}>
                {versionLabel(ver, numberOf(i))}
              </option>
            ))}
          </select>
        </label>
      </div>
      <form
        class="toolbar"
        aria-label="Compare the versions of two instants"
        onSubmit={(e) => {
          e.preventDefault();
          compareInstants();
        }}
      >
        <label>
          Or as of (UTC)
          <input value={fromText} placeholder={instantText(list[list.length - 1]?.valid_from ?? 0)} size={22} onInput={(e) => setFromText(e.currentTarget.value)} />
        </label>
        <label>
          and as of (UTC)
          <input value={toText} placeholder={instantText(Date.now() * 1000)} size={22} onInput={(e) => setToText(e.currentTarget.value)} />
        </label>
        <button type="submit">Compare instants</button>
      </form>
      {instantError ? (
        <div class="error" role="alert">
          {instantError}
        </div>
      ) : null}
      {a && b ? <VersionDiff a={a} b={b} labelA={`v${numberOf(from)}`} labelB={`v${numberOf(to)}`} /> : null}
    </>
  );
}

function VersionDiff({ a, b, labelA, labelB }: { a: Node; b: Node; labelA: string; labelB: string }) {
  const changes = useMemo(() => diffVersions(a, b), [a, b]);
  const c = countChanges(changes);
  if (a === b) return <p class="muted" data-testid="version-diff">Pick two different versions to see what changed.</p>;
  return (
    <div data-testid="version-diff">
      <p>
        From {labelA} to {labelB}:{" "}
        {changes.length === 0 ? "no difference." : `${c.added} added, ${c.removed} removed, ${c.changed} changed.`}
      </p>
      {changes.length > 0 ? (
        <table class="table node-diff">
          <caption class="sr-only">
            Changes from {labelA} to {labelB}
          </caption>
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Change</th>
              <th scope="col">{labelA}</th>
              <th scope="col">{labelB}</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((ch) => (
              <tr key={ch.path} class={`node-diff-${ch.kind}`}>
                <th scope="row" class="mono">
                  {ch.path}
                </th>
                <td>{ch.kind}</td>
                <td class="mono">{ch.kind === "added" ? <span class="muted">–</span> : <DiffValue value={ch.before} />}</td>
                <td class="mono">{ch.kind === "removed" ? <span class="muted">–</span> : <DiffValue value={ch.after} />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function DiffValue({ value }: { value: unknown }) {
  return value === "" ? <span class="muted">(empty)</span> : <>{valueText(value)}</>;
}

type HistoryEvent = Schemas["HistoryEvent"];
const HISTORY_COLUMNS: readonly TableColumn<HistoryEvent>[] = [
  {
    key: "ts",
    header: "When",
    cell: (e) => {
      const s = Date.parse(e.ts) / 1000;
      return Number.isFinite(s) ? <When seconds={Math.floor(s)} /> : e.ts;
    },
  },
  { key: "type", header: "Event", cell: (e) => <span class="mono">{e.type}</span> },
  { key: "status", header: "Status", cell: (e) => e.status },
  { key: "actor", header: "Actor", cell: (e) => e.actor || "–" },
  { key: "message", header: "Message", cell: (e) => e.message },
  { key: "seq", header: "Seq", numeric: true, cell: (e) => num(e.seq) },
];

function Ledger({ crn }: { crn: string }) {
  const history = useAsync((signal) => get("/api/v1/history/resource", { query: { crn, limit: HISTORY_LIMIT }, signal }), [crn]);
  const h = history.data;
  return (
    <Card title="Ledger events">
      <ErrorBox error={history.error} />
      {!h && history.loading ? <Loading what="ledger events" /> : null}
      {h ? (
        <>
          <p>
            {h.total === 0 ? "The ledger has no event about this resource." : `${num(h.total)} ${h.total === 1 ? "event" : "events"}, newest first`}
            {h.total > h.events.length ? `; the newest ${num(h.events.length)} are listed` : ""}
            {h.total > 0 ? (
              <>
                {" · "}
                <a href={href("history", [], { crn })}>Open in History</a>
              </>
            ) : null}
          </p>
          {h.events.length > 0 ? <Table columns={HISTORY_COLUMNS} rows={h.events} rowKey={(e) => e.id} caption="Ledger events of this resource, newest first" /> : null}
        </>
      ) : null}
    </Card>
  );
}

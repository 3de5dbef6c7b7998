// Explorer: the estate's nodes one page at a time, paged and filtered by the
// server (`GET /api/v1/graph/nodes`), with the filters in the route's query
// so that any view can link to a filtered listing.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { get } from "../api/client";
import type { Schemas } from "../api/types";
import { download, toCsv } from "../lib/csv";
import {
  CSV_COLUMNS,
  csvName,
  type ExplorerFilters,
  filtersFromQuery,
  filtersToQuery,
  FIRST_PAGE,
  isFiltered,
  nextPage,
  NO_FILTERS,
  nodesQuery,
  PAGE_SIZES,
  type Paging,
  previousPage,
  rowRange,
  sameFilters,
  type WasteFilter,
} from "../lib/explorer";
import { money, num, shortCrn } from "../lib/format";
import { Card, ErrorBox, Loading, Table, type TableColumn, useAsync } from "../lib/ui";
import { href, navigate } from "../router";

type Node = Schemas["Node"];

/** How long typing may pause before the listing follows it. */
const DEBOUNCE_MS = 250;

const COLUMNS: readonly TableColumn<Node>[] = [
  {
    key: "crn",
    header: "CRN",
    cell: (n) => (
      <a class="mono" href={href("node", [n.crn])} title={n.crn}>
        {shortCrn(n.crn)}
      </a>
    ),
  },
  { key: "type", header: "Type", cell: (n) => n.type },
  { key: "provider", header: "Provider", cell: (n) => n.provider },
  { key: "account", header: "Account", cell: (n) => <span class="mono">{n.account}</span> },
  { key: "region", header: "Region", cell: (n) => n.region },
  { key: "state", header: "State", cell: (n) => n.state || "–" },
  { key: "cost", header: "Monthly cost", numeric: true, cell: (n) => money(n.cost_usd_mo) },
  {
    key: "waste",
    header: "Waste",
    cell: (n) =>
      n.is_waste ? (
        <span class="explorer-waste">
          <span class="badge waste">waste</span>
          {n.waste_reason ? (
            <span class="explorer-reason" title={n.waste_reason}>
              {n.waste_reason}
            </span>
          ) : null}
        </span>
      ) : (
        <span class="muted">no</span>
      ),
  },
  { key: "risk", header: "Risk", numeric: true, cell: (n) => num(Math.round(n.risk_score)) },
  { key: "phase", header: "Phase", cell: (n) => (n.phase ? <span class="badge">{n.phase}</span> : <span class="muted">–</span>) },
];

export function Explorer({ route }: ViewProps) {
  const applied = useMemo(() => filtersFromQuery(route.query), [route.query]);
  const appliedKey = href("explorer", [], filtersToQuery(applied));

  // What the inputs show; typed filters reach the route (and the API) after
  // a pause, chosen ones at once.
  const [draft, setDraft] = useState<ExplorerFilters>(applied);
  const sent = useRef<ExplorerFilters>(applied);
  useEffect(() => {
    // A link or the back button changed the filters: show them. Our own
    // navigation comes back as what was sent, and leaves the inputs alone
    // (they may already hold more typing).
    if (!sameFilters(applied, sent.current)) setDraft(applied);
    sent.current = applied;
  }, [appliedKey]);

  const commit = (f: ExplorerFilters, replace: boolean) => {
    if (sameFilters(f, applied)) return;
    sent.current = f;
    const to = href("explorer", [], filtersToQuery(f));
    if (replace) location.replace(to);
    else navigate(to);
  };

  useEffect(() => {
    if (sameFilters(draft, applied)) return;
    const t = setTimeout(() => commit(draft, true), DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [draft.q, draft.type, draft.state, draft.tag]);

  const choose = (patch: Partial<ExplorerFilters>) => {
    const f = { ...draft, ...patch };
    setDraft(f);
    commit(f, false);
  };

  // The cursor stack belongs to one set of filters: new filters start over.
  const [pg, setPg] = useState<{ key: string; paging: Paging }>({ key: appliedKey, paging: FIRST_PAGE });
  const paging = pg.key === appliedKey ? pg.paging : FIRST_PAGE;
  const setPaging = (p: Paging) => setPg({ key: appliedKey, paging: p });

  // The answer keeps the page and filters it was asked for, so that what
  // the table says of its rows never runs ahead of the rows.
  const page = useAsync(
    async (signal) => {
      const answer = await get("/api/v1/graph/nodes", { query: nodesQuery(applied, paging.cursor), signal });
      return { ...answer, paging, filters: applied };
    },
    [appliedKey, paging.cursor],
  );
  const stats = useAsync((signal) => get("/api/v1/graph/stats", { signal }), []);
  const providers = useMemo(() => {
    const known = Object.keys(stats.data?.providers ?? {}).sort();
    if (draft.provider && !known.includes(draft.provider)) known.push(draft.provider);
    return known;
  }, [stats.data, draft.provider]);

  const data = page.data;
  const rows = data?.nodes ?? [];
  const range = data ? rowRange(data.paging, data.filters.limit, rows.length) : "";

  return (
    <div class="explorer">
      <h1>Explorer</h1>
      <form class="toolbar explorer-filters" role="search" aria-label="Filter nodes" onSubmit={(e) => { e.preventDefault(); commit(draft, true); }}>
        <label>
          CRN contains
          <input
            type="search"
            name="q"
            value={draft.q}
            placeholder="vol-0abc"
            autoComplete="off"
            onInput={(e) => setDraft({ ...draft, q: e.currentTarget.value })}
          />
        </label>
        <label>
          Provider
          <select name="provider" value={draft.provider} onChange={(e) => choose({ provider: e.currentTarget.value })}>
            <option value="">All</option>
            {providers.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <label>
          Type
          <input
            name="type"
            value={draft.type}
            placeholder="ec2:volume"
            autoComplete="off"
            size={14}
            onInput={(e) => setDraft({ ...draft, type: e.currentTarget.value })}
          />
        </label>
        <label>
          State
          <input
            name="state"
            value={draft.state}
            placeholder="available"
            autoComplete="off"
            size={10}
            onInput={(e) => setDraft({ ...draft, state: e.currentTarget.value })}
          />
        </label>
        <label>
          Waste
          <select name="waste" value={draft.waste} onChange={(e) => choose({ waste: e.currentTarget.value as WasteFilter })}>
            <option value="">Any</option>
            <option value="true">Waste only</option>
            <option value="false">Not waste</option>
          </select>
        </label>
        <label>
          Tag
          <input
            name="tag"
            value={draft.tag}
            placeholder="env=prod"
            autoComplete="off"
            size={14}
            onInput={(e) => setDraft({ ...draft, tag: e.currentTarget.value })}
          />
        </label>
        <label>
          Page size
          <select name="limit" value={String(draft.limit)} onChange={(e) => choose({ limit: Number(e.currentTarget.value) })}>
            {PAGE_SIZES.map((s) => (
              <option key={s} value={String(s)}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="button" disabled={!isFiltered(draft)} onClick={() => choose({ ...NO_FILTERS, limit: draft.limit })}>
          Clear filters
        </button>
      </form>

      <Card
        title="Nodes"
        actions={
          <>
            <button type="button" disabled={rows.length === 0} onClick={() => data && download(csvName(data.filters, data.paging, rows.length), toCsv(rows, CSV_COLUMNS))}>
              Export page as CSV
            </button>
          </>
        }
      >
        <div class="explorer-status">
          <p role="status" aria-live="polite" aria-atomic="true">
            {data ? (
              <>
                <strong data-testid="explorer-total">{num(data.total)}</strong> {data.total === 1 ? "node matches" : "nodes match"}
                {isFiltered(data.filters) ? " these filters" : ""}; rows <span data-testid="explorer-range">{range}</span>
                {page.loading ? <span class="muted"> (updating…)</span> : null}
              </>
            ) : null}
          </p>
          <Pager
            paging={paging}
            nextCursor={data?.next_cursor ?? ""}
            busy={page.loading}
            onPrevious={() => setPaging(previousPage(paging))}
            onNext={() => data && setPaging(nextPage(paging, data.next_cursor))}
          />
        </div>
        <ErrorBox error={page.error} />
        {!data && page.loading ? <Loading what="nodes" /> : null}
        {data ? (
          <div class="explorer-table" aria-busy={page.loading}>
            <Table
              columns={COLUMNS}
              rows={rows}
              rowKey={(n) => n.crn}
              caption={`Nodes ${range} of ${num(data.total)}`}
              empty={isFiltered(applied) ? "No node matches these filters." : "The graph has no nodes yet."}
              onRow={(n) => navigate(href("node", [n.crn]))}
            />
          </div>
        ) : null}
        {data && rows.length > 0 ? (
          <div class="explorer-status">
            <span class="muted">
              Rows {range} of {num(data.total)}
            </span>
            <Pager
              paging={paging}
              nextCursor={data.next_cursor}
              busy={page.loading}
              label="bottom"
              onPrevious={() => setPaging(previousPage(paging))}
              onNext={() => setPaging(nextPage(paging, data.next_cursor))}
            />
          </div>
        ) : null}
      </Card>
    </div>
  );
}

function Pager(props: { paging: Paging; nextCursor: string; busy: boolean; label?: string; onPrevious: () => void; onNext: () => void }) {
  return (
    <nav class="explorer-pager" aria-label={props.label ? `Pages (${props.label})` : "Pages"}>
      <button type="button" disabled={props.paging.stack.length === 0 || props.busy} onClick={props.onPrevious}>
        Previous page
      </button>
      <span class="muted">page {props.paging.stack.length + 1}</span>
      <button type="button" disabled={!props.nextCursor || props.busy} onClick={props.onNext}>
        Next page
      </button>
    </nav>
  );
}

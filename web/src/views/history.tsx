// History: the ledger as a timeline, newest first, with the filters of
// `GET /api/v1/history` in the route's query; events written while the
// page is open arrive on the `/events` stream and are put on top when the
// filters admit them; older pages follow the cursor. Above it, the hash
// chain's verification and the ledger's totals.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { get } from "../api/client";
import type { LinkState } from "../api/events";
import type { Schemas } from "../api/types";
import { useApp } from "../context";
import { href, navigate } from "../router";
import { money, num, relative, shortCrn } from "../lib/format";
import {
  EVENT_TYPES,
  eventSeconds,
  filtersFromQuery,
  filtersToQuery,
  fromEnvelope,
  type HistoryEvent,
  type HistoryFilters,
  matches,
  mergeNewest,
  payloadSummary,
  SAU_ACTION,
  sameFilters,
  shortHash,
  STATUSES,
  statusClass,
} from "../lib/history";
import { type Async, Card, ErrorBox, Loading, useAsync } from "../lib/ui";

/** Events a page asks for (the API allows up to 500). */
export const PAGE_SIZE = 50;
const FILTER_DEBOUNCE_MS = 400;

interface Page {
  events: HistoryEvent[];
  total: number;
  cursor: string;
}

type Summary = Schemas["HistorySummary"];

export function History({ route }: ViewProps) {
  const { events } = useApp();
  const filters = useMemo(() => filtersFromQuery(route.query), [route.query.toString()]);
  const key = JSON.stringify(filters);
  const filtersRef = useRef(filters);
  filtersRef.current = filters;

  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [older, setOlder] = useState<{ loading: boolean; error: Error | null }>({ loading: false, error: null });
  const [fresh, setFresh] = useState<ReadonlySet<number>>(new Set());
  const [link, setLink] = useState<LinkState>(events.state);
  const [summary, setSummary] = useState<Summary | null>(null);
  const [now, setNow] = useState(() => Date.now() / 1000);
  // Events that arrived while the first page was on its way.
  const early = useRef<HistoryEvent[]>([]);
  const loaded = useRef(false);

  useEffect(() => {
    const ctl = new AbortController();
    early.current = [];
    loaded.current = false;
    setPage(null);
    setError(null);
    setFresh(new Set());
    get("/api/v1/history", { query: { ...filtersToQuery(filters), limit: PAGE_SIZE }, signal: ctl.signal }).then(
      (p) => {
        if (ctl.signal.aborted) return;
        const merged = mergeNewest(early.current, p.events);
        loaded.current = true;
        setPage({ events: merged, total: p.total + (merged.length - p.events.length), cursor: p.next_cursor });
      },
      (e: unknown) => {
        if (ctl.signal.aborted) return;
        setError(e instanceof Error ? e : new Error(String(e)));
      },
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);

  const summaryLoad = useAsync((signal) => get("/api/v1/history/summary", { signal }), []);
  useEffect(() => {
    if (summaryLoad.data) setSummary(summaryLoad.data);
  }, [summaryLoad.data]);
  const verify = useAsync((signal) => get("/api/v1/ledger/verify", { signal }), []);

  useEffect(() => events.onState(setLink), [events]);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now() / 1000), 30_000);
    return () => clearInterval(t);
  }, []);

  useEffect(
    () =>
      events.subscribe((env) => {
        const e = fromEnvelope(env);
        setSummary((s) =>
          s
            ? {
                ...s,
                total_events: s.total_events + 1,
                approved: s.approved + (e.status === "APPROVED" ? 1 : 0),
                rejected: s.rejected + (e.status === "REJECTED" ? 1 : 0),
                quarantined: s.quarantined + (e.status === "QUARANTINED" ? 1 : 0),
                last_event: e.ts,
              }
            : s,
        );
        if (!matches(e, filtersRef.current)) return;
        if (!loaded.current) {
          early.current.push(e);
          return;
        }
        setPage((p) => (p && !p.events.some((x) => x.seq === e.seq) ? { ...p, events: [e, ...p.events], total: p.total + 1 } : p));
        setFresh((f) => new Set(f).add(e.seq));
      }),
    [events],
  );

  async function loadOlder() {
    if (!page?.cursor) return;
    setOlder({ loading: true, error: null });
    try {
      const p = await get("/api/v1/history", { query: { ...filtersToQuery(filters), limit: PAGE_SIZE, cursor: page.cursor } });
      setPage((cur) => {
        if (!cur) return cur;
        const have = new Set(cur.events.map((e) => e.seq));
        return { ...cur, events: [...cur.events, ...p.events.filter((e) => !have.has(e.seq))], cursor: p.next_cursor };
      });
      setOlder({ loading: false, error: null });
    } catch (e) {
      setOlder({ loading: false, error: e instanceof Error ? e : new Error(String(e)) });
    }
  }

  return (
    <div class="history">
      <h1>History</h1>
      <div class="hist-top">
        <VerifyCard verify={verify} />
        {summary ? <Totals summary={summary} /> : summaryLoad.error ? <ErrorBox error={summaryLoad.error} /> : null}
      </div>
      <Card title="Filters">
        <Filters filters={filters} />
      </Card>
      <Card
        title="Events"
        actions={
          <span class={`hist-live hist-live-${link}`} data-testid="history-live">
            <span aria-hidden="true">●</span> {link === "live" ? "Live: new events appear on top" : link === "connecting" ? "Connecting…" : "Disconnected, retrying"}
          </span>
        }
      >
        <ErrorBox error={error} />
        {!page && !error ? <Loading what="events" /> : null}
        {page ? (
          <>
            <p class="muted" aria-live="polite" data-testid="history-count">
              {num(page.total)} {page.total === 1 ? "event matches" : "events match"}
              {Object.keys(filtersToQuery(filters)).length > 0 ? " the filters" : ""}; showing {num(page.events.length)}, newest first.
              {fresh.size > 0 ? ` ${num(fresh.size)} arrived live.` : ""}
            </p>
            {page.events.length === 0 ? (
              <p class="muted">No event matches.</p>
            ) : (
              <ol class="hist-timeline" aria-label="Events, newest first" data-testid="history-events">
                {page.events.map((e) => (
                  <EventItem key={e.seq} e={e} filters={filters} now={now} fresh={fresh.has(e.seq)} />
                ))}
              </ol>
            )}
            <ErrorBox error={older.error} />
            {page.cursor ? (
              <button type="button" onClick={() => void loadOlder()} disabled={older.loading}>
                {older.loading ? "Loading…" : `Load ${PAGE_SIZE} older events`}
              </button>
            ) : page.events.length > 0 ? (
              <p class="muted">The oldest matching event is shown.</p>
            ) : null}
          </>
        ) : null}
      </Card>
    </div>
  );
}

function VerifyCard({ verify }: { verify: Async<Schemas["LedgerVerification"]> }) {
  const v = verify.data;
  const [at, setAt] = useState<string>("");
  useEffect(() => {
    if (v) setAt(new Date().toISOString().replace(/\.\d{3}Z$/, "Z"));
  }, [v]);
  return (
    <section class="card hist-verify" aria-labelledby="hist-verify-title" data-testid="ledger-verify">
      <header>
        <h2 id="hist-verify-title">Hash chain</h2>
        <div class="actions">
          <button type="button" onClick={verify.reload} disabled={verify.loading}>
            {verify.loading ? "Verifying…" : "Verify again"}
          </button>
        </div>
      </header>
      <div aria-live="polite">
        {verify.error ? <ErrorBox error={verify.error} /> : null}
        {!v && verify.loading ? <Loading what="the verification" /> : null}
        {v ? (
          v.ok ? (
            <p class="hist-ok">
              <span class="badge good">✓ verified</span> Chain verified, {num(v.events)} events
              {v.last_seq > 0 ? ` (seq ${num(v.first_seq)} to ${num(v.last_seq)})` : ""}: each links to the one before and hashes to its stored
              hash.
            </p>
          ) : (
            <div class="error" role="alert">
              <strong>Chain broken</strong>
              {v.first_broken ? ` at seq ${num(v.first_broken.seq)}: ${v.first_broken.reason}` : ""}. {num(v.events)} events checked before it
              (stored seq {num(v.first_seq)} to {num(v.last_seq)}). Run <code>svc ledger verify</code> on the daemon’s host.
            </div>
          )
        ) : null}
        {v?.checkpoint ? (
          <p class="muted">
            Starts after a prune: seq {num(v.checkpoint.through_seq)}, hash <code title={v.checkpoint.hash}>{shortHash(v.checkpoint.hash)}</code>.
          </p>
        ) : null}
        {v && at ? (
          <p class="muted">
            Checked at <time dateTime={at}>{at}</time>.
          </p>
        ) : null}
      </div>
    </section>
  );
}

function Totals({ summary }: { summary: Summary }) {
  const items: [string, string][] = [
    ["Events", num(summary.total_events)],
    ["Approved", num(summary.approved)],
    ["Rejected", num(summary.rejected)],
    ["Quarantined", num(summary.quarantined)],
    ["Daemon runs", num(summary.session_count)],
    ["Savings recorded", money(summary.total_savings_usd)],
  ];
  return (
    <section class="hist-totals" aria-label="Ledger totals">
      <dl class="kpis">
        {items.map(([k, v]) => (
          <div class="kpi" key={k}>
            <dt class="label">{k}</dt>
            <dd class="value">{v}</dd>
          </div>
        ))}
      </dl>
      {summary.first_event ? (
        <p class="muted">
          From <time dateTime={summary.first_event}>{summary.first_event}</time> to{" "}
          <time dateTime={summary.last_event}>{summary.last_event}</time>.
        </p>
      ) : null}
    </section>
  );
}

/** The filter form: typed fields reach the route 400 ms after the last keystroke. */
function Filters({ filters }: { filters: HistoryFilters }) {
  const [draft, setDraft] = useState<HistoryFilters>(filters);
  const key = JSON.stringify(filters);
  useEffect(() => setDraft(filters), [key]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => {
    if (sameFilters(draft, filters)) return;
    const t = setTimeout(() => navigate(href("history", [], filtersToQuery(draft))), FILTER_DEBOUNCE_MS);
    return () => clearTimeout(t);
  }, [draft, key]); // eslint-disable-line react-hooks/exhaustive-deps
  const set = (k: keyof HistoryFilters) => (e: Event) => {
    const v = (e.currentTarget as HTMLInputElement).value;
    setDraft((d) => ({ ...d, [k]: v }));
  };
  const any = Object.keys(filtersToQuery(draft)).length > 0;
  return (
    <form
      class="toolbar hist-filters"
      aria-label="Event filters"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(href("history", [], filtersToQuery(draft)));
      }}
    >
      <label>
        Type
        <input list="hist-types" value={draft.type} onInput={set("type")} placeholder="any" spellcheck={false} autocomplete="off" />
      </label>
      <datalist id="hist-types">
        <option value={SAU_ACTION}>every s.a.u decision</option>
        {EVENT_TYPES.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
      <label>
        Status
        <select value={draft.status} onChange={set("status")}>
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label class="hist-crn">
        Resource (CRN)
        <input value={draft.crn} onInput={set("crn")} placeholder="crn:svc:…" spellcheck={false} autocomplete="off" />
      </label>
      <label>
        Since
        <input value={draft.since} onInput={set("since")} placeholder="3d, 12h or RFC 3339" spellcheck={false} autocomplete="off" />
      </label>
      <label>
        Until
        <input value={draft.until} onInput={set("until")} placeholder="RFC 3339" spellcheck={false} autocomplete="off" />
      </label>
      <button type="submit" class="primary">
        Apply
      </button>
      <button type="button" disabled={!any} onClick={() => navigate(href("history"))}>
        Clear
      </button>
    </form>
  );
}

function EventItem({ e, filters, now, fresh }: { e: HistoryEvent; filters: HistoryFilters; now: number; fresh: boolean }) {
  const summary = payloadSummary(e.type, e.meta);
  const hasPayload = Object.keys(e.meta).length > 0;
  return (
    <li class={fresh ? "hist-event hist-fresh" : "hist-event"} data-seq={e.seq} data-type={e.type}>
      <div class="hist-head">
        <span class={`badge hist-type ${statusClass(e.status)}`}>{e.type}</span>
        {e.status !== "OK" ? <span class={`badge ${statusClass(e.status)}`}>{e.status}</span> : null}
        {fresh ? <span class="badge hist-new">new</span> : null}
        <time dateTime={e.ts} title={e.ts}>
          {relative(eventSeconds(e), now)}
        </time>
        <span class="mono muted">{e.ts}</span>
        {e.actor ? (
          <span>
            by <strong>{e.actor}</strong>
          </span>
        ) : null}
        <span class="muted hist-ids">
          seq {e.seq} · hash <code title={e.hash}>{shortHash(e.hash)}</code>
        </span>
      </div>
      {e.message ? <div class="hist-msg">{e.message}</div> : null}
      {e.crn ? (
        <div class="hist-crn-line">
          <a href={href("node", [e.crn])} title={e.crn} class="mono">
            {shortCrn(e.crn)}
          </a>
          {filters.crn.trim() === "" ? (
            <>
              {" "}
              <a class="hist-only" href={href("history", [], { ...filtersToQuery(filters), crn: e.crn })}>
                only this resource<span class="sr-only">: {e.crn}</span>
              </a>
            </>
          ) : null}
        </div>
      ) : null}
      {summary ? <div class="muted hist-summary">{summary}</div> : null}
      {hasPayload ? (
        <details class="hist-payload">
          <summary>
            Payload<span class="sr-only"> of event {e.seq}</span>
          </summary>
          <pre class="mono">{JSON.stringify(e.meta, null, 2)}</pre>
        </details>
      ) : null}
    </li>
  );
}

// The remediation board (issue 44): SPEC 3.1's stages as columns with
// their true counts and savings, an item's frozen plan in a side panel,
// and the operator's decisions on it. Every decision names the plan hash
// the operator was shown; a plan that changed since is a 409, shown as
// such, and the new plan is loaded for review.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { ApiError, del, get, post } from "../api/client";
import type { Schemas } from "../api/types";
import { useApp, useCan } from "../context";
import { rfc3339, money, num, parseDuration, relative, shortCrn } from "../lib/format";
import {
  BOARD_EVENTS,
  classifyDiff,
  columnsOf,
  decisionError,
  decisionsFor,
  diffLabel,
  itemName,
  mergeStage,
  MAX_LISTED,
  PAGE,
  parseTtl,
  revertablesOf,
  type Column,
  type Item,
  type Part,
  type Plan,
  type Queue,
  type Revertable,
  type Stage,
} from "../lib/remediation";
import { Card, Confirm, ErrorBox, Loading, Table, useAsync } from "../lib/ui";
import { href, navigate } from "../router";

type Bulk = Schemas["RemediationBulkResult"];
type Saga = Schemas["SagaOutcome"];

/** Loads the queue: every stage's first `PAGE` items, and more of those the operator asked for. */
async function loadQueue(listed: Partial<Record<Part, number>>, signal?: AbortSignal): Promise<Queue> {
  let q = await get("/api/v1/remediation/queue", { query: { limit: PAGE }, signal });
  for (const [stage, limit] of Object.entries(listed) as [Part, number][]) {
    if (limit > PAGE) {
      const more = await get("/api/v1/remediation/queue", { query: { stage, limit }, signal });
      q = mergeStage(q, more, stage);
    }
  }
  return q;
}

export function Remediation({ route }: ViewProps) {
  const canDecide = useCan("operator");
  const { events } = useApp();
  const [queue, setQueue] = useState<Queue | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [listed, setListed] = useState<Partial<Record<Part, number>>>({});
  const [loadingMore, setLoadingMore] = useState<Part | null>(null);
  const [selected, setSelected] = useState<Map<string, string>>(new Map());
  const [bulkAsk, setBulkAsk] = useState<"approve" | "reject" | null>(null);
  const [bulkBusy, setBulkBusy] = useState(false);
  const [bulkResult, setBulkResult] = useState<Bulk | null>(null);
  const [bulkError, setBulkError] = useState<string | null>(null);
  const [changedCrn, setChangedCrn] = useState<{ crn: string; what: string } | null>(null);
  const [isolationTick, setIsolationTick] = useState(0);
  const listedRef = useRef(listed);
  listedRef.current = listed;
  const openCrn = route.query.get("crn") ?? "";
  const openRef = useRef(openCrn);
  openRef.current = openCrn;
  /** Until when events about the open item are the operator's own decisions. */
  const ownUntil = useRef(0);

  const refresh = useMemo(() => {
    let ctl: AbortController | null = null;
    return () => {
      ctl?.abort();
      const c = new AbortController();
      ctl = c;
      loadQueue(listedRef.current, c.signal).then(
        (q) => {
          if (c.signal.aborted) return;
          setQueue(q);
          setError(null);
        },
        (e: unknown) => {
          if (c.signal.aborted) return;
          setError(e instanceof Error ? e : new Error(String(e)));
        },
      );
    };
  }, []);

  useEffect(() => refresh(), [refresh]);

  // Live: the board follows the ledger, a refresh at most every second.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const off = events.subscribe((e) => {
      if (!BOARD_EVENTS.has(e.event_type)) return;
      if (e.event_type === "ISOLATION") setIsolationTick((t) => t + 1);
      if (e.crn && e.crn === openRef.current && Date.now() > ownUntil.current) {
        setChangedCrn({ crn: e.crn, what: `${e.event_type} by ${e.actor}` });
      }
      if (timer) clearTimeout(timer);
      timer = setTimeout(refresh, 1000);
    });
    return () => {
      off();
      if (timer) clearTimeout(timer);
    };
  }, [events, refresh]);

  const columns = useMemo(() => (queue ? columnsOf(queue) : []), [queue]);
  const openItem = useMemo(() => {
    if (!queue || !openCrn) return null;
    for (const c of columns) {
      const it = c.items.find((i) => i.crn === openCrn);
      if (it) return it;
    }
    return null;
  }, [columns, openCrn, queue]);

  const showMore = (c: Column) => {
    const limit = Math.min(MAX_LISTED, c.items.length + PAGE * 4);
    setLoadingMore(c.stage);
    get("/api/v1/remediation/queue", { query: { stage: c.stage, limit } }).then(
      (fresh) => {
        setListed((l) => ({ ...l, [c.stage]: limit }));
        setQueue((q) => (q ? mergeStage(q, fresh, c.stage) : fresh));
        setLoadingMore(null);
      },
      (e: unknown) => {
        setError(e instanceof Error ? e : new Error(String(e)));
        setLoadingMore(null);
      },
    );
  };

  const toggle = (it: Item, on: boolean) => {
    setSelected((s) => {
      const n = new Map(s);
      if (on) n.set(it.crn, it.plan_hash);
      else n.delete(it.crn);
      return n;
    });
  };

  const runBulk = (action: "approve" | "reject") => {
    setBulkBusy(true);
    setBulkError(null);
    const items = [...selected].map(([crn, plan_hash]) => ({ crn, plan_hash }));
    post("/api/v1/remediation/bulk", { action, items }).then(
      (r) => {
        setBulkResult(r);
        setBulkBusy(false);
        setBulkAsk(null);
        setSelected(new Map());
        refresh();
      },
      (e: unknown) => {
        setBulkError(decisionError(e).message);
        setBulkBusy(false);
        setBulkAsk(null);
      },
    );
  };

  const total = columns.reduce((a, c) => a + (c.stage === "rejected" ? 0 : c.count), 0);
  return (
    <div class={openCrn ? "rb with-panel" : "rb"}>
      <h1>Remediation board</h1>
      <ErrorBox error={error} />
      {!queue ? (
        error ? null : <Loading what="the remediation queue" />
      ) : (
        <>
          <p class="muted rb-summary">
            {num(total)} resources in the pipeline; {money(queue.savings_usd_mo.pending)} a month awaiting approval.
            {canDecide ? "" : " You can look but not decide: your role is viewer."}
          </p>
          {canDecide && selected.size > 0 ? (
            <div class="toolbar rb-bulk" role="region" aria-label="Bulk decision">
              <span>{num(selected.size)} selected</span>
              <button type="button" class="primary" onClick={() => setBulkAsk("approve")}>
                Approve selected
              </button>
              <button type="button" onClick={() => setBulkAsk("reject")}>
                Reject selected
              </button>
              <button type="button" onClick={() => setSelected(new Map())}>
                Clear selection
              </button>
            </div>
          ) : null}
          {bulkError ? (
            <div class="error" role="alert">
              {bulkError}
            </div>
          ) : null}
          {bulkResult ? <BulkOutcome result={bulkResult} onClose={() => setBulkResult(null)} /> : null}
          <div class="rb-board">
            {columns.map((c) => (
              <StageColumn
                key={c.stage}
                column={c}
                openCrn={openCrn}
                canDecide={canDecide}
                selected={selected}
                onToggle={toggle}
                onMore={() => showMore(c)}
                loadingMore={loadingMore === c.stage}
              />
            ))}
          </div>
          <Isolations canDecide={canDecide} tick={isolationTick} />
        </>
      )}
      {openCrn ? (
        <ItemPanel
          key={openCrn}
          crn={openCrn}
          item={openItem}
          canDecide={canDecide}
          changed={changedCrn?.crn === openCrn ? changedCrn.what : null}
          onAcknowledge={() => setChangedCrn(null)}
          onDeciding={() => {
            ownUntil.current = Date.now() + 10_000;
          }}
          onDecided={() => {
            refresh();
            setIsolationTick((t) => t + 1);
          }}
          onClose={() => navigate(href("remediation"))}
        />
      ) : null}
      {bulkAsk ? (
        <Confirm
          title={bulkAsk === "approve" ? "Approve the selected items?" : "Reject the selected items?"}
          confirmLabel={bulkAsk === "approve" ? `Approve ${selected.size}` : `Reject ${selected.size}`}
          busy={bulkBusy}
          onConfirm={() => runBulk(bulkAsk)}
          onCancel={() => setBulkAsk(null)}
        >
          <p>
            {bulkAsk === "approve"
              ? `Each of the ${num(selected.size)} items runs its plan (the one shown on the board, by its hash); a plan that changed since is refused, item by item.`
              : `The ${num(selected.size)} items leave the queue while their plans are unchanged.`}
          </p>
        </Confirm>
      ) : null}
    </div>
  );
}

function StageColumn(props: {
  column: Column;
  openCrn: string;
  canDecide: boolean;
  selected: Map<string, string>;
  onToggle: (it: Item, on: boolean) => void;
  onMore: () => void;
  loadingMore: boolean;
}) {
  const c = props.column;
  const id = `rb-col-${c.stage}`;
  return (
    <section class={`rb-col rb-col-${c.stage}`} aria-labelledby={id} data-stage={c.stage}>
      <header>
        <h2 id={id}>{c.title}</h2>
        <div class="rb-col-stats">
          <span class="rb-count" data-testid={`count-${c.stage}`}>
            {num(c.count)}
          </span>{" "}
          <span class="muted">items</span> · <span data-testid={`savings-${c.stage}`}>{money(c.savings)}</span>
          <span class="muted">/mo</span>
        </div>
        <code class="muted">{c.stage}</code>
      </header>
      {c.items.length === 0 ? (
        <p class="muted rb-empty">None.</p>
      ) : (
        <ul class="rb-items">
          {c.items.map((it) => {
            const d = decisionsFor(it);
            const label = itemName(it.crn);
            return (
              <li key={it.crn} class={`rb-item${it.crn === props.openCrn ? " open" : ""}`}>
                {props.canDecide && d.bulk ? (
                  <input
                    type="checkbox"
                    aria-label={`Select ${label} for a bulk decision`}
                    checked={props.selected.has(it.crn)}
                    onChange={(e) => props.onToggle(it, (e.currentTarget as HTMLInputElement).checked)}
                  />
                ) : null}
                <a href={href("remediation", [], { crn: it.crn })} class="rb-item-link">
                  <span class="rb-item-name">{label}</span>
                  <span class="rb-item-meta">{it.type}</span>
                  <span class="rb-item-meta">
                    {money(it.savings_usd_mo)}/mo · risk {Math.round(it.risk_score)} · {it.action}
                  </span>
                  {it.blockers.length > 0 ? <span class="badge warn">{it.blockers.length} blocker(s)</span> : null}
                  {it.failure ? <span class="badge bad">last run failed</span> : null}
                </a>
              </li>
            );
          })}
        </ul>
      )}
      <p class="rb-shown muted">
        {num(c.items.length)} of {num(c.count)} shown
      </p>
      {c.more ? (
        <button type="button" onClick={props.onMore} disabled={props.loadingMore} aria-label={`Show more ${c.title} items`}>
          {props.loadingMore ? "Loading…" : "Show more"}
        </button>
      ) : null}
    </section>
  );
}

function BulkOutcome({ result, onClose }: { result: Bulk; onClose: () => void }) {
  return (
    <Card
      title={`Bulk ${result.action}: ${result.succeeded} done, ${result.failed} not`}
      actions={
        <button type="button" onClick={onClose}>
          Dismiss
        </button>
      }
    >
      <Table
        caption="The result of each item of the bulk decision"
        rowKey={(r) => r.crn}
        rows={result.results}
        columns={[
          { key: "crn", header: "Resource", cell: (r) => <a href={href("node", [r.crn])}>{shortCrn(r.crn)}</a>, sort: (r) => r.crn },
          {
            key: "ok",
            header: "Result",
            cell: (r) => (r.ok ? <span class="badge good">done</span> : <span class="badge bad">not done</span>),
            sort: (r) => (r.ok ? 1 : 0),
          },
          { key: "status", header: "Status", cell: (r) => r.status, sort: (r) => r.status, numeric: true },
          { key: "error", header: "Why not", cell: (r) => r.error ?? "" },
        ]}
      />
    </Card>
  );
}

type Ask =
  | { kind: "approve" }
  | { kind: "reject" }
  | { kind: "override" }
  | { kind: "quarantine" }
  | { kind: "revert"; hash: string; what: string };

function ItemPanel(props: {
  crn: string;
  item: Item | null;
  canDecide: boolean;
  changed: string | null;
  onAcknowledge: () => void;
  onDeciding: () => void;
  onDecided: () => void;
  onClose: () => void;
}) {
  const plan = useAsync((signal) => get("/api/v1/plan", { query: { crn: props.crn }, signal }), [props.crn]);
  const undo = useAsync(async (signal) => {
    const [q, c] = await Promise.all([
      get("/api/v1/history", { query: { crn: props.crn, type: "QUARANTINE", limit: 20 }, signal }),
      get("/api/v1/history", { query: { crn: props.crn, type: "EXECUTION_COMMIT", limit: 20 }, signal }),
    ]);
    return revertablesOf([...q.events, ...c.events].sort((a, b) => b.seq - a.seq));
  }, [props.crn]);
  const [ask, setAsk] = useState<Ask | null>(null);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ text: string; bad: boolean } | null>(null);
  const [saga, setSaga] = useState<Saga | null>(null);
  const [reason, setReason] = useState("");
  const [moveTo, setMoveTo] = useState<Stage | "">("");
  const [qAction, setQAction] = useState<"ISOLATE" | "STOP" | "DELETE">("ISOLATE");
  const [ttl, setTtl] = useState("7d");
  const [reasonCode, setReasonCode] = useState("");
  const [revertHash, setRevertHash] = useState("");
  const headingRef = useRef<HTMLHeadingElement>(null);
  useEffect(() => headingRef.current?.focus(), [props.crn]);

  const p: Plan | null = plan.data;
  // An item deeper in its stage than the board lists: looked up in its stage.
  const found = useAsync(
    async (signal) => {
      if (props.item || !p) return null;
      const q = await get("/api/v1/remediation/queue", { query: { stage: p.stage as Part, limit: MAX_LISTED }, signal });
      return (q.stages[p.stage as Part] ?? []).find((i) => i.crn === props.crn) ?? null;
    },
    [props.crn, p?.stage, props.item === null],
  );
  const item = props.item ?? found.data;
  // The buttons follow the plan the operator is shown (its stage), not the
  // live board: a decision on a plan that changed since is the API's 409.
  const shownStage: Part | undefined = item?.stage === "rejected" ? "rejected" : (p?.stage as Part | undefined);
  const d = p ? decisionsFor({ stage: shownStage ?? "flagged", held_by: item?.held_by ?? null, plan_hash: p.plan_hash }) : null;

  /** Runs a decision; `after` shows what it did. A stale plan reloads for review. */
  const decide = <T,>(run: () => Promise<T>, after: (r: T) => string) => {
    setBusy(true);
    setMessage(null);
    props.onDeciding();
    run().then(
      (r) => {
        setBusy(false);
        setAsk(null);
        setReason("");
        setMessage({ text: after(r), bad: false });
        plan.reload();
        undo.reload();
        props.onAcknowledge();
        props.onDecided();
      },
      (e: unknown) => {
        setBusy(false);
        setAsk(null);
        const de = decisionError(e);
        setMessage({ text: de.message, bad: true });
        if (de.stale) {
          plan.reload();
          props.onAcknowledge();
          props.onDecided();
        }
      },
    );
  };

  const hash = p?.plan_hash ?? "";
  const crn = props.crn;
  const confirmAsk = () => {
    if (!ask) return;
    switch (ask.kind) {
      case "approve":
        decide(
          () => post("/api/v1/remediation/approve", { crn, plan_hash: hash }),
          (r) => {
            setSaga(r);
            return r.applied ? `Approved: the plan ran and the item is ${r.stage}.` : `Approved, but the run failed and was undone: ${r.failure ?? "no reason given"}.`;
          },
        );
        break;
      case "reject":
        decide(
          () => post("/api/v1/remediation/reject", { crn, plan_hash: hash, reason: reason.trim() || undefined }),
          () => "Rejected: the item leaves the queue while its plan is unchanged.",
        );
        break;
      case "override":
        decide(
          () => post("/api/v1/remediation/override", { crn, plan_hash: hash, reason: reason.trim() }),
          (r) => `Overridden: the item is now ${r.stage}.`,
        );
        break;
      case "quarantine":
        decide(
          () => post("/api/v1/remediation/quarantine", { crn, action: qAction, reason: reason.trim() }),
          (r) => `Quarantined (${r.action}). Undo it with the payload hash ${r.compensating_payload_hash}.`,
        );
        break;
      case "revert":
        decide(
          () => post("/api/v1/remediation/revert", { hash: ask.hash }),
          (r) => `Reverted: ${r.reverted} undone by ${r.action}.`,
        );
        break;
    }
  };

  const ttlSeconds = parseTtl(ttl, parseDuration);
  return (
    <aside class="rb-panel" aria-labelledby="rb-panel-title">
      <div class="rb-panel-head">
        <h2 id="rb-panel-title" tabIndex={-1} ref={headingRef}>
          {shortCrn(props.crn)}
        </h2>
        <button type="button" onClick={props.onClose} aria-label="Close the item">
          Close
        </button>
      </div>
      <p class="mono rb-crn">
        <a href={href("node", [props.crn])}>{props.crn}</a>
      </p>
      {props.changed ? (
        <div class="notice" role="status">
          This item changed since you opened it ({props.changed}). Decisions still name the plan shown here.{" "}
          <button
            type="button"
            onClick={() => {
              plan.reload();
              props.onAcknowledge();
            }}
          >
            Load the new plan
          </button>
        </div>
      ) : null}
      {message ? (
        <div class={message.bad ? "error" : "notice"} role={message.bad ? "alert" : "status"} data-testid="decision-message">
          {message.text}
        </div>
      ) : null}
      {item ? <ItemFacts item={item} /> : null}
      {plan.loading && !p ? <Loading what="the plan" /> : null}
      <ErrorBox error={plan.error} />
      {p ? <PlanView plan={p} /> : null}
      {saga ? <SagaView saga={saga} /> : null}
      {props.canDecide && p && d ? (
        <section class="rb-decide" aria-labelledby="rb-decide-title">
          <h3 id="rb-decide-title">Decide</h3>
          <p class="muted">
            Decisions name plan <code>{hash.slice(0, 12)}</code>; a plan that changed since is refused.
          </p>
          <div class="rb-buttons">
            {d.approve ? (
              <button type="button" class="primary" disabled={busy} onClick={() => setAsk({ kind: "approve" })}>
                Approve
              </button>
            ) : null}
            {d.reject ? (
              <button type="button" disabled={busy} onClick={() => setAsk({ kind: "reject" })}>
                Reject
              </button>
            ) : null}
            {d.override ? (
              <button type="button" class="danger" disabled={busy} onClick={() => setAsk({ kind: "override" })}>
                Override the gate
              </button>
            ) : null}
          </div>
          {d.moves.length > 0 ? (
            <form
              class="toolbar"
              onSubmit={(e) => {
                e.preventDefault();
                if (!moveTo) return;
                decide(
                  () => post("/api/v1/remediation/move", { crn, plan_hash: hash, to: moveTo, reason: reason.trim() || undefined }),
                  (r) => `Moved to ${r.stage}.`,
                );
              }}
            >
              <label>
                Move to
                <select value={moveTo} onChange={(e) => setMoveTo((e.currentTarget as HTMLSelectElement).value as Stage | "")}>
                  <option value="">choose a stage</option>
                  {d.moves.map((m) => (
                    <option key={m} value={m}>
                      {m}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                Reason (optional)
                <input value={reason} onInput={(e) => setReason((e.currentTarget as HTMLInputElement).value)} />
              </label>
              <button type="submit" disabled={busy || !moveTo}>
                Move
              </button>
            </form>
          ) : null}
          <div class="rb-buttons">
            <button type="button" class="danger" disabled={busy} onClick={() => setAsk({ kind: "quarantine" })}>
              Quarantine…
            </button>
          </div>
          <form
            class="toolbar"
            aria-label="Ignore this resource"
            onSubmit={(e) => {
              e.preventDefault();
              if (ttlSeconds === null || !reasonCode.trim()) return;
              decide(
                () => post("/api/v1/isolation", { crn, reason_code: reasonCode.trim(), ttl_seconds: ttlSeconds }),
                (r) => (r.expires_at ? `Ignored until ${rfc3339(r.expires_at)}.` : "Ignored for good."),
              );
            }}
          >
            <label>
              Ignore for (7d, 12h, permanent)
              <input
                value={ttl}
                aria-invalid={ttlSeconds === null}
                onInput={(e) => setTtl((e.currentTarget as HTMLInputElement).value)}
              />
            </label>
            <label>
              Reason code
              <input value={reasonCode} required onInput={(e) => setReasonCode((e.currentTarget as HTMLInputElement).value)} />
            </label>
            <button type="submit" disabled={busy || ttlSeconds === null || !reasonCode.trim()}>
              Ignore
            </button>
          </form>
          {ttlSeconds === null ? <p class="error">Give the lifetime as a duration like 7d, 12h or 30m, or “permanent”.</p> : null}
          <h3>Undo</h3>
          {undo.data && undo.data.length > 0 ? (
            <ul class="rb-undo">
              {undo.data.map((r: Revertable) => (
                <li key={r.hash}>
                  <span>{r.what}</span> <code title={r.hash}>{r.hash.slice(0, 12)}</code>{" "}
                  <button type="button" disabled={busy} onClick={() => setAsk({ kind: "revert", hash: r.hash, what: r.what })}>
                    Revert
                  </button>
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted">Nothing recorded to undo for this resource.</p>
          )}
          <form
            class="toolbar"
            onSubmit={(e) => {
              e.preventDefault();
              const h = revertHash.trim();
              if (h) setAsk({ kind: "revert", hash: h, what: "the payload named by this hash" });
            }}
          >
            <label>
              Compensating payload hash
              <input class="mono" size={40} value={revertHash} onInput={(e) => setRevertHash((e.currentTarget as HTMLInputElement).value)} />
            </label>
            <button type="submit" disabled={busy || !revertHash.trim()}>
              Revert by hash
            </button>
          </form>
        </section>
      ) : null}
      {ask ? (
        <Confirm
          title={askTitle(ask)}
          confirmLabel={askLabel(ask)}
          busy={busy || (needsReason(ask) && !reason.trim())}
          onConfirm={confirmAsk}
          onCancel={() => setAsk(null)}
        >
          {ask.kind === "approve" && p ? (
            <p>
              This runs the plan's {p.steps.length} step(s) ({p.steps.map((s) => s.action).join(", ")}) on {shortCrn(crn)}, blast
              radius {num(p.blast_radius)}. Plan hash <code>{p.plan_hash.slice(0, 16)}</code>.
            </p>
          ) : null}
          {ask.kind === "override" ? (
            <p>Break-glass: the item passes the safety gate despite its blockers. Say why; the ledger keeps it.</p>
          ) : null}
          {ask.kind === "revert" ? (
            <p>
              Undo {ask.what} (<code>{ask.hash.slice(0, 16)}</code>)? A payload can be reverted once.
            </p>
          ) : null}
          {ask.kind === "quarantine" ? (
            <label class="rb-field">
              Action
              <select value={qAction} onChange={(e) => setQAction((e.currentTarget as HTMLSelectElement).value as typeof qAction)}>
                <option value="ISOLATE">ISOLATE: strip network access and IAM</option>
                <option value="STOP">STOP</option>
                <option value="DELETE">DELETE</option>
              </select>
            </label>
          ) : null}
          {ask.kind === "reject" || ask.kind === "override" || ask.kind === "quarantine" ? (
            <label class="rb-field">
              {needsReason(ask) ? "Reason (required)" : "Reason (optional)"}
              <textarea rows={3} value={reason} onInput={(e) => setReason((e.currentTarget as HTMLTextAreaElement).value)} />
            </label>
          ) : null}
        </Confirm>
      ) : null}
    </aside>
  );
}

function needsReason(a: Ask): boolean {
  return a.kind === "override" || a.kind === "quarantine";
}

function askTitle(a: Ask): string {
  switch (a.kind) {
    case "approve":
      return "Approve and run this plan?";
    case "reject":
      return "Reject this item?";
    case "override":
      return "Override the safety gate?";
    case "quarantine":
      return "Quarantine this resource?";
    case "revert":
      return "Revert?";
  }
}

function askLabel(a: Ask): string {
  switch (a.kind) {
    case "approve":
      return "Approve and run";
    case "reject":
      return "Reject";
    case "override":
      return "Override";
    case "quarantine":
      return "Quarantine";
    case "revert":
      return "Revert";
  }
}

function ItemFacts({ item }: { item: Item }) {
  return (
    <dl class="rb-facts">
      <dt>Stage</dt>
      <dd>
        {item.stage} <span class="muted">since {relative(item.stage_since)}</span>
      </dd>
      <dt>Type</dt>
      <dd>{item.type}</dd>
      <dt>Rule</dt>
      <dd>{item.rule}</dd>
      <dt>Why</dt>
      <dd>{item.reason}</dd>
      <dt>Savings</dt>
      <dd>{money(item.savings_usd_mo)}/mo</dd>
      <dt>Risk</dt>
      <dd>{Math.round(item.risk_score)}</dd>
      <dt>Reachability</dt>
      <dd>{item.reachability}</dd>
      <dt>State</dt>
      <dd>{item.state}</dd>
      {item.proof ? (
        <>
          <dt>Reversible</dt>
          <dd>
            {item.proof.safe ? <span class="badge good">safe</span> : <span class="badge bad">not safe</span>} {item.proof.reason}{" "}
            <span class="muted">({item.proof.source})</span>
          </dd>
        </>
      ) : null}
      {item.blockers.length > 0 ? (
        <>
          <dt>Blockers</dt>
          <dd>
            <ul>
              {item.blockers.map((b) => (
                <li key={b}>{b}</li>
              ))}
            </ul>
          </dd>
        </>
      ) : null}
      {item.override ? (
        <>
          <dt>Override</dt>
          <dd>
            by {item.override.actor}: {item.override.reason}
          </dd>
        </>
      ) : null}
      {item.rejected ? (
        <>
          <dt>Rejected</dt>
          <dd>{item.rejected}</dd>
        </>
      ) : null}
      {item.failure ? (
        <>
          <dt>Last run</dt>
          <dd class="bad-text">{item.failure}</dd>
        </>
      ) : null}
    </dl>
  );
}

function PlanView({ plan }: { plan: Plan }) {
  const lines = classifyDiff(plan.terraform);
  return (
    <section class="rb-plan" aria-labelledby="rb-plan-title">
      <h3 id="rb-plan-title">Plan</h3>
      <dl class="rb-facts">
        <dt>Intent</dt>
        <dd>{plan.intent}</dd>
        <dt>Plan hash</dt>
        <dd>
          <code class="rb-hash" data-testid="plan-hash">
            {plan.plan_hash}
          </code>
        </dd>
        <dt>Blast radius</dt>
        <dd>{num(plan.blast_radius)} resource(s)</dd>
        <dt>Savings</dt>
        <dd>{money(plan.savings_usd_mo)}/mo</dd>
      </dl>
      <table class="table">
        <caption class="sr-only">The plan's steps and their inverses</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Step</th>
            <th scope="col">Undone by</th>
            <th scope="col">Provider CLI</th>
          </tr>
        </thead>
        <tbody>
          {plan.steps.map((s) => (
            <tr key={s.index}>
              <td>{s.index + 1}</td>
              <td>{s.action}</td>
              <td>{s.inverse}</td>
              <td>
                <code class="rb-cli">{s.cli}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h4>Terraform-style diff</h4>
      <pre class="rb-diff" aria-label="Terraform-style diff" tabIndex={0}>
        {lines.map((l, i) => {
          const label = diffLabel(l.kind);
          const body = (
            <>
              {label ? <span class="sr-only">{label}: </span> : null}
              {l.text}
            </>
          );
          if (l.kind === "add")
            return (
              <ins key={i} class="diff-line diff-add">
                {body}
              </ins>
            );
          if (l.kind === "remove")
            return (
              <del key={i} class="diff-line diff-remove">
                {body}
              </del>
            );
          return (
            <span key={i} class={`diff-line diff-${l.kind}`}>
              {body}
            </span>
          );
        })}
      </pre>
    </section>
  );
}

function SagaView({ saga }: { saga: Saga }) {
  return (
    <section aria-labelledby="rb-saga-title">
      <h3 id="rb-saga-title">What ran</h3>
      <p>
        Saga <code>{saga.saga_id}</code>: {saga.applied ? "applied" : "not applied"}, now {saga.stage}
        {saga.failure ? `; ${saga.failure}` : ""}.
      </p>
      <table class="table">
        <caption class="sr-only">The steps that ran</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Step</th>
            <th scope="col">Status</th>
            <th scope="col">Compensating payload hash</th>
          </tr>
        </thead>
        <tbody>
          {saga.steps.map((s) => (
            <tr key={s.index}>
              <td>{s.index + 1}</td>
              <td>
                {s.action} <span class="muted">(undo: {s.inverse})</span>
              </td>
              <td>{s.status}</td>
              <td>
                <code>{s.compensating_payload_hash}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Isolations({ canDecide, tick }: { canDecide: boolean; tick: number }) {
  const list = useAsync((signal) => get("/api/v1/isolation", { signal }), [tick]);
  const [busy, setBusy] = useState<string | null>(null);
  const [err, setErr] = useState<Error | null>(null);
  const remove = (crn: string) => {
    setBusy(crn);
    setErr(null);
    del("/api/v1/isolation/{crn}", { params: { crn } }).then(
      () => {
        setBusy(null);
        list.reload();
      },
      (e: unknown) => {
        setBusy(null);
        setErr(e instanceof ApiError ? e : new Error(String(e)));
      },
    );
  };
  type Entry = Schemas["Isolation"];
  return (
    <Card title={`Ignored resources${list.data ? ` (${num(list.data.count)})` : ""}`}>
      <ErrorBox error={list.error ?? err} />
      {list.data ? (
        <Table<Entry>
          caption="Resources on the ignore list"
          rowKey={(e) => e.crn}
          rows={list.data.entries}
          empty="No resource is ignored."
          columns={[
            { key: "crn", header: "Resource", cell: (e) => <a href={href("node", [e.crn])}>{shortCrn(e.crn)}</a>, sort: (e) => e.crn },
            { key: "reason", header: "Reason", cell: (e) => e.reason_code, sort: (e) => e.reason_code },
            { key: "by", header: "By", cell: (e) => e.author_identifier, sort: (e) => e.author_identifier },
            { key: "created", header: "Since", cell: (e) => relative(e.created_at), sort: (e) => e.created_at },
            {
              key: "expires",
              header: "Expires",
              cell: (e) => (e.expires_at ? relative(e.expires_at) : "never"),
              sort: (e) => e.expires_at ?? Number.MAX_SAFE_INTEGER,
            },
            ...(canDecide
              ? [
                  {
                    key: "remove",
                    header: "Remove",
                    cell: (e: Entry) => (
                      <button type="button" disabled={busy === e.crn} onClick={() => remove(e.crn)} aria-label={`Stop ignoring ${shortCrn(e.crn)}`}>
                        Stop ignoring
                      </button>
                    ),
                  },
                ]
              : []),
          ]}
        />
      ) : list.loading ? (
        <Loading what="the ignore list" />
      ) : null}
    </Card>
  );
}

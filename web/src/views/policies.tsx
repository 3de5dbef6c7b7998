// Policies: the mesh of CEL rules in evaluation order with what each did
// in the last scan (matches, errors), switching a rule between enforcing
// and shadow, reordering by dragging a row or with its move buttons, a
// rule editor with a live dry-run, and importing a pack's rules.
import { useEffect, useRef, useState } from "preact/hooks";
import type { ViewProps } from ".";
import { del, get, post } from "../api/client";
import type { Schemas } from "../api/types";
import { useApp, useCan } from "../context";
import { href } from "../router";
import { milliseconds, num, relative, shortCrn } from "../lib/format";
import { moveItem } from "../lib/policies";
import { RuleEditor } from "../lib/policies-editor";
import { PackImport } from "../lib/policies-import";
import { Card, Confirm, ErrorBox, Loading, useAsync } from "../lib/ui";

type Entry = Schemas["PolicyMeshEntry"];

export function Policies(_props: ViewProps) {
  const canEdit = useCan("operator");
  const { events } = useApp();
  const mesh = useAsync((signal) => get("/api/v1/policies/mesh", { signal }), []);
  const [rules, setRules] = useState<Entry[] | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [said, setSaid] = useState("");
  const [removing, setRemoving] = useState<Entry | null>(null);
  const busyRef = useRef(false);
  busyRef.current = busy;
  const loadingRef = useRef(false);
  loadingRef.current = mesh.loading;
  // A mesh that arrived, or a change announced, while a change of ours was
  // in flight may predate it: it is loaded again once ours is done.
  const missedRef = useRef(false);

  useEffect(() => {
    if (!mesh.data) return;
    if (busyRef.current) missedRef.current = true;
    else setRules(mesh.data.policies);
  }, [mesh.data]);

  // A scan's counts and another client's changes show without a reload.
  useEffect(
    () =>
      events.subscribe((e) => {
        if (e.event_type !== "POLICY_CHANGE" && e.event_type !== "SCAN_COMPLETED") return;
        if (busyRef.current) missedRef.current = true;
        else mesh.reload();
      }),
    [events, mesh.reload],
  );

  function begin() {
    busyRef.current = true;
    setBusy(true);
    setError(null);
  }

  /** Ends a change; a mesh requested before the daemon applied it is dropped for a fresh one. */
  function end() {
    busyRef.current = false;
    setBusy(false);
    if (missedRef.current || loadingRef.current) {
      missedRef.current = false;
      mesh.reload();
    }
  }

  /** Sends `next` as the new order; the old one comes back on failure. */
  async function reorder(next: Entry[], moved: string) {
    const before = rules;
    setRules(next);
    begin();
    try {
      const res = await post("/api/v1/policies/reorder", { order: next.map((r) => r.id) });
      const byId = new Map(next.map((r) => [r.id, r]));
      setRules(res.rules.map((r, i) => ({ ...(byId.get(r.id) as Entry), priority: i })));
      const at = res.rules.findIndex((r) => r.id === moved);
      setSaid(`${moved} moved to position ${at + 1} of ${res.rules.length}.`);
    } catch (e) {
      setRules(before);
      setError(e instanceof Error ? e : new Error(String(e)));
      setSaid(`${moved} was not moved.`);
    } finally {
      end();
    }
  }

  async function toggle(r: Entry) {
    begin();
    try {
      const res = await post("/api/v1/policies/toggle", { rule_id: r.id });
      setRules((list) => list?.map((x) => (x.id === r.id ? { ...x, mode: res.mode, enforcement_mode: res.mode } : x)) ?? null);
      setSaid(`${r.id} is now ${res.mode}.`);
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      end();
    }
  }

  async function remove(r: Entry) {
    begin();
    try {
      await del("/api/v1/policies/{id}", { params: { id: r.id } });
      setRules((list) => list?.filter((x) => x.id !== r.id) ?? null);
      setSaid(`${r.id} removed.`);
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setRemoving(null);
      end();
    }
  }

  const pass = mesh.data?.last_pass;
  return (
    <div class="policies">
      <h1>Policies</h1>
      <p class="sr-only" role="status" aria-live="polite">
        {said}
      </p>
      <Card
        title="Rules"
        actions={
          <button type="button" onClick={mesh.reload} disabled={mesh.loading}>
            Refresh
          </button>
        }
      >
        {pass ? (
          <p class="muted">
            {num(rules?.length ?? 0)} rules in evaluation order, first first. The last policy pass evaluated {num(pass.nodes)} resources in{" "}
            {milliseconds(pass.duration_ms)}.{canEdit ? " Drag a row, or use its move buttons, to change the order." : ""}
          </p>
        ) : null}
        <ErrorBox error={error} />
        <ErrorBox error={mesh.error} />
        {!rules && mesh.loading ? <Loading what="the rules" /> : null}
        {rules ? (
          <RulesTable
            rules={rules}
            canEdit={canEdit}
            busy={busy}
            onMove={(from, to) => {
              const r = rules[from];
              if (r) void reorder(moveItem(rules, from, to), r.id);
            }}
            onToggle={(r) => void toggle(r)}
            onRemove={setRemoving}
          />
        ) : null}
      </Card>
      <Card title={canEdit ? "New rule" : "Try a condition"}>
        <RuleEditor
          canAdd={canEdit}
          onAdded={(id) => {
            setSaid(`${id} added.`);
            mesh.reload();
          }}
        />
      </Card>
      {canEdit ? (
        <Card title="Import rules from a pack">
          <PackImport onImported={mesh.reload} />
        </Card>
      ) : null}
      {removing ? (
        <Confirm
          title={`Remove ${removing.id}?`}
          confirmLabel="Remove"
          busy={busy}
          onCancel={() => setRemoving(null)}
          onConfirm={() => void remove(removing)}
        >
          <p>
            The rule stops being evaluated from the next scan; the removal is recorded in the ledger (POLICY_CHANGE).
          </p>
          <pre class="mono pol-cond">{removing.condition}</pre>
        </Confirm>
      ) : null}
    </div>
  );
}

function RulesTable(props: {
  rules: Entry[];
  canEdit: boolean;
  busy: boolean;
  onMove: (from: number, to: number) => void;
  onToggle: (r: Entry) => void;
  onRemove: (r: Entry) => void;
}) {
  const { rules, canEdit, busy } = props;
  const [dragging, setDragging] = useState<number | null>(null);
  const [over, setOver] = useState<number | null>(null);
  // After a move, focus stays on the moved rule's buttons: each time the
  // list is drawn again (the move itself, the daemon's answer, a reload)
  // and focus fell to the page, it goes back, until the user puts it
  // somewhere else.
  const focusNext = useRef<{ id: string; dir: "up" | "down" } | null>(null);
  const tableRef = useRef<HTMLTableElement>(null);

  useEffect(() => {
    const f = focusNext.current;
    if (!f || busy) return;
    const row = tableRef.current?.querySelector(`tr[data-rule="${CSS.escape(f.id)}"]`);
    const active = document.activeElement;
    if (active && active !== document.body && row?.contains(active)) return;
    if (active && active !== document.body) {
      focusNext.current = null;
      return;
    }
    const want = row?.querySelector<HTMLButtonElement>(`button[data-move="${f.dir}"]:not([disabled])`);
    const other = row?.querySelector<HTMLButtonElement>(`button[data-move]:not([disabled])`);
    (want ?? other)?.focus();
  }, [rules, busy]);

  useEffect(() => {
    const elsewhere = (e: Event) => {
      const f = focusNext.current;
      const row = f ? tableRef.current?.querySelector(`tr[data-rule="${CSS.escape(f.id)}"]`) : null;
      if (f && !(e.target instanceof Node && row?.contains(e.target))) focusNext.current = null;
    };
    document.addEventListener("focusin", elsewhere);
    document.addEventListener("pointerdown", elsewhere);
    return () => {
      document.removeEventListener("focusin", elsewhere);
      document.removeEventListener("pointerdown", elsewhere);
    };
  }, []);

  function move(i: number, dir: "up" | "down") {
    const r = rules[i];
    if (!r) return;
    focusNext.current = { id: r.id, dir };
    props.onMove(i, dir === "up" ? i - 1 : i + 1);
  }

  if (rules.length === 0) {
    return <p class="muted">No rules yet.{canEdit ? " Add one below, or import a pack’s rules." : ""}</p>;
  }
  return (
    <table class="table pol-table" ref={tableRef} data-testid="rules">
      <caption class="sr-only">Policy rules in evaluation order</caption>
      <thead>
        <tr>
          <th scope="col" class="num">
            #
          </th>
          <th scope="col">Rule</th>
          <th scope="col">Action</th>
          <th scope="col">Mode</th>
          <th scope="col" class="num">
            Matches
          </th>
          <th scope="col" class="num">
            Errors
          </th>
          <th scope="col">Last evaluated</th>
          {canEdit ? <th scope="col">Change</th> : null}
        </tr>
      </thead>
      <tbody>
        {rules.map((r, i) => {
          const last = r.last_evaluation;
          const cls = [dragging === i ? "pol-dragging" : "", over === i && dragging !== null && dragging !== i ? "pol-over" : ""].join(" ").trim();
          return (
            <tr
              key={r.id}
              data-rule={r.id}
              class={cls || undefined}
              draggable={canEdit && !busy}
              onDragStart={
                canEdit
                  ? (e) => {
                      setDragging(i);
                      e.dataTransfer?.setData("text/plain", r.id);
                      if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
                    }
                  : undefined
              }
              onDragOver={
                canEdit
                  ? (e) => {
                      if (dragging === null) return;
                      e.preventDefault();
                      if (e.dataTransfer) e.dataTransfer.dropEffect = "move";
                      if (over !== i) setOver(i);
                    }
                  : undefined
              }
              onDrop={
                canEdit
                  ? (e) => {
                      e.preventDefault();
                      const from = dragging;
                      setDragging(null);
                      setOver(null);
                      if (from !== null && from !== i) props.onMove(from, i);
                    }
                  : undefined
              }
              onDragEnd={() => {
                setDragging(null);
                setOver(null);
              }}
            >
              <td class="num">
                {canEdit ? (
                  <span class="pol-grip" aria-hidden="true" title="Drag to reorder">
                    ⠿{" "}
                  </span>
                ) : null}
                {i + 1}
              </td>
              <td class="pol-rule">
                <div>
                  <strong class="mono">{r.id}</strong> <span class="badge">{r.origin}</span>{" "}
                  <span class="muted">{r.evaluation === "fast" ? "column predicate" : "CEL interpreter"}</span>
                </div>
                <code class="pol-cond">{r.condition}</code>
                {r.message ? <div class="muted">{r.message}</div> : null}
              </td>
              <td>
                <span class={`badge pol-action-${r.action}`}>{r.action}</span>
              </td>
              <td>
                <span class={r.mode === "shadow" ? "badge warn" : "badge good"} data-testid="mode">
                  {r.mode}
                </span>
                {canEdit ? (
                  <div>
                    <button
                      type="button"
                      class="pol-small"
                      disabled={busy}
                      aria-label={`Switch ${r.id} to ${r.mode === "shadow" ? "enforcing" : "shadow"}`}
                      onClick={() => props.onToggle(r)}
                    >
                      {r.mode === "shadow" ? "To enforcing" : "To shadow"}
                    </button>
                  </div>
                ) : null}
              </td>
              <td class="num">{num(r.trigger_count)}</td>
              <td class="num">
                {r.error_count > 0 ? <span class="badge bad">{num(r.error_count)}</span> : "0"}
                {last?.first_error ? (
                  <div class="pol-first-error" title={last.first_error}>
                    {last.first_error}
                  </div>
                ) : null}
              </td>
              <td>
                {last ? (
                  <>
                    <time dateTime={last.at} title={last.at}>
                      {relative(Date.parse(last.at) / 1000)}
                    </time>{" "}
                    <span class="muted">scan {num(last.scan_seq)}</span>
                    {last.sample_crns.length > 0 ? (
                      <details class="pol-samples">
                        <summary>
                          {last.sample_crns.length} sample {last.sample_crns.length === 1 ? "match" : "matches"}
                          <span class="sr-only"> of {r.id}</span>
                        </summary>
                        <ul class="pol-crns">
                          {last.sample_crns.map((c) => (
                            <li key={c}>
                              <a href={href("node", [c])} title={c}>
                                {shortCrn(c)}
                              </a>
                            </li>
                          ))}
                        </ul>
                      </details>
                    ) : null}
                  </>
                ) : (
                  <span class="muted">not yet (next scan)</span>
                )}
              </td>
              {canEdit ? (
                <td class="pol-change">
                  <button
                    type="button"
                    class="pol-small"
                    data-move="up"
                    disabled={busy || i === 0}
                    aria-label={`Move ${r.id} up`}
                    onClick={() => move(i, "up")}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    class="pol-small"
                    data-move="down"
                    disabled={busy || i === rules.length - 1}
                    aria-label={`Move ${r.id} down`}
                    onClick={() => move(i, "down")}
                  >
                    ↓
                  </button>
                  {r.origin === "api" ? (
                    <button type="button" class="pol-small" disabled={busy} aria-label={`Remove ${r.id}`} onClick={() => props.onRemove(r)}>
                      Remove
                    </button>
                  ) : (
                    <span class="muted pol-small-note" title="A pack's rules are removed with their pack">
                      from a pack
                    </span>
                  )}
                </td>
              ) : null}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

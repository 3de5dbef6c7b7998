// Small building blocks every view uses: loading an API answer, showing an
// error, a sortable table, a confirmation dialog.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../api/client";

export interface Async<T> {
  data: T | null;
  error: ApiError | Error | null;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` when `deps` change and on `reload()`; a newer load wins over
 * an older one still in flight (its answer is dropped).
 */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Async<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setLoading(true);
    load(ctl.signal).then(
      (d) => {
        if (ctl.signal.aborted) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (ctl.signal.aborted) return;
        setError(e instanceof Error ? e : new Error(String(e)));
        setLoading(false);
      },
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

export function ErrorBox({ error }: { error: Error | null }) {
  if (!error) return null;
  const code = error instanceof ApiError ? ` (${error.status} ${error.code})` : "";
  return (
    <div class="error" role="alert">
      {error.message}
      {code}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <div class="loading" role="status" aria-live="polite">
      Loading {what}…
    </div>
  );
}

export function Card({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card" aria-label={title}>
      <header>
        <h2>{title}</h2>
        {actions ? <div class="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

export interface TableColumn<T> {
  key: string;
  header: string;
  cell: (row: T) => ComponentChildren;
  /** Sort value; a column without one is not sortable. */
  sort?: (row: T) => number | string;
  numeric?: boolean;
}

export type SortState = { key: string; desc: boolean } | null;

export function sortRows<T>(rows: readonly T[], columns: readonly TableColumn<T>[], sort: SortState): T[] {
  const col = sort && columns.find((c) => c.key === sort.key);
  if (!sort || !col?.sort) return rows.slice();
  const f = col.sort;
  const dir = sort.desc ? -1 : 1;
  return rows
    .map((r, i) => ({ r, i, v: f(r) }))
    .sort((a, b) => (a.v < b.v ? -dir : a.v > b.v ? dir : a.i - b.i))
    .map((x) => x.r);
}

/**
 * A table whose headers sort it (client side, for lists the API returns
 * whole); `onSort` instead hands sorting to the caller (server side).
 */
export function Table<T>(props: {
  columns: readonly TableColumn<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  caption: string;
  sort?: SortState;
  onSort?: (s: SortState) => void;
  empty?: string;
  onRow?: (row: T) => void;
}) {
  const [localSort, setLocalSort] = useState<SortState>(null);
  const sort = props.onSort ? (props.sort ?? null) : localSort;
  const setSort = props.onSort ?? setLocalSort;
  const rows = props.onSort ? props.rows : sortRows(props.rows, props.columns, sort);
  return (
    <table class="table">
      <caption class="sr-only">{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((c) => {
            const active = sort?.key === c.key;
            const ariaSort = active ? (sort?.desc ? "descending" : "ascending") : undefined;
            return (
              <th key={c.key} scope="col" class={c.numeric ? "num" : undefined} aria-sort={ariaSort}>
                {c.sort ? (
                  <button
                    type="button"
                    class="sort"
                    onClick={() => setSort(active && sort ? (sort.desc ? null : { key: c.key, desc: true }) : { key: c.key, desc: false })}
                  >
                    {c.header}
                    <span aria-hidden="true">{active ? (sort?.desc ? " ▼" : " ▲") : ""}</span>
                  </button>
                ) : (
                  c.header
                )}
              </th>
            );
          })}
        </tr>
      </thead>
      <tbody>
        {rows.length === 0 ? (
          <tr>
            <td colSpan={props.columns.length} class="empty">
              {props.empty ?? "Nothing to show."}
            </td>
          </tr>
        ) : (
          rows.map((r) => (
            <tr key={props.rowKey(r)} class={props.onRow ? "clickable" : undefined} onClick={props.onRow ? () => props.onRow?.(r) : undefined}>
              {props.columns.map((c) => (
                <td key={c.key} class={c.numeric ? "num" : undefined}>
                  {c.cell(r)}
                </td>
              ))}
            </tr>
          ))
        )}
      </tbody>
    </table>
  );
}

/** A modal question; `onConfirm` runs only on the confirming button. */
export function Confirm(props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="confirm-title" onCancel={(e) => { e.preventDefault(); props.onCancel(); }}>
      <h2 id="confirm-title">{props.title}</h2>
      <div class="dialog-body">{props.children}</div>
      <div class="dialog-actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class="primary" disabled={props.busy} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

// The Policies view's rule editor: a rule's fields, with a dry-run of its
// condition against the live graph as it is typed (debounced; an answer to
// an older text is dropped), the compile error's position marked in the
// condition, and the API's refusal of an add shown at its field.
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, post } from "../api/client";
import type { Schemas } from "../api/types";
import { href } from "../router";
import { milliseconds, num, shortCrn } from "./format";
import { fieldOf, markPosition, type RuleField, type RuleInput } from "./policies";

type DryRun = Schemas["PolicyDryRun"];

/** Sample CRNs a dry-run returns: a count is exact whatever this is. */
export const DRY_RUN_SAMPLES = 10;
const DEBOUNCE_MS = 300;

interface CompileError {
  message: string;
  line: number | null;
  column: number | null;
}

type DryState =
  | { kind: "idle" }
  | { kind: "checking" }
  | { kind: "result"; result: DryRun }
  | { kind: "compile"; error: CompileError }
  | { kind: "failed"; error: Error };

/**
 * Dry-runs `condition` 300 ms after it last changed; only the answer to
 * the newest text is kept (older requests are aborted and ignored).
 */
export function useDryRun(condition: string): DryState {
  const [state, setState] = useState<DryState>({ kind: "idle" });
  const latest = useRef(0);
  useEffect(() => {
    const mine = ++latest.current;
    if (condition.trim() === "") {
      setState({ kind: "idle" });
      return;
    }
    setState({ kind: "checking" });
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      post("/api/v1/policies/dry-run", { condition, limit: DRY_RUN_SAMPLES }, { signal: ctl.signal }).then(
        (result) => {
          if (mine === latest.current) setState({ kind: "result", result });
        },
        (e: unknown) => {
          if (mine !== latest.current || ctl.signal.aborted) return;
          if (e instanceof ApiError && e.status === 422) {
            const line = typeof e.details.line === "number" ? e.details.line : null;
            const column = typeof e.details.column === "number" ? e.details.column : null;
            setState({ kind: "compile", error: { message: e.message, line, column } });
          } else {
            setState({ kind: "failed", error: e instanceof Error ? e : new Error(String(e)) });
          }
        },
      );
    }, DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [condition]);
  return state;
}

/** The condition with the character a compile error points at marked. */
function MarkedCondition({ condition, line, column }: { condition: string; line: number; column: number }) {
  const m = markPosition(condition, line, column);
  if (!m) return null;
  return (
    <pre class="pol-marked mono" aria-label={`The condition, with line ${line}, column ${column} marked`}>
      {m.before}
      <mark>{m.at === "" ? "\u00a0" : m.at}</mark>
      {m.after}
    </pre>
  );
}

/** What the condition matches now, or why it does not compile. */
export function DryRunPanel({ condition, state }: { condition: string; state: DryState }) {
  return (
    <div class="pol-dry" aria-live="polite" data-testid="dry-run">
      {state.kind === "idle" ? <p class="muted">Type a condition to see what it matches in the live graph.</p> : null}
      {state.kind === "checking" ? <p class="muted">Checking…</p> : null}
      {state.kind === "failed" ? (
        <div class="error" role="alert">
          Dry-run failed: {state.error.message}
        </div>
      ) : null}
      {state.kind === "compile" ? (
        <div class="pol-compile" data-testid="dry-run-error">
          <p class="pol-field-error" id="pol-dry-error">
            {state.error.message}
          </p>
          {state.error.line !== null && state.error.column !== null ? (
            <MarkedCondition condition={condition} line={state.error.line} column={state.error.column} />
          ) : null}
        </div>
      ) : null}
      {state.kind === "result" ? <DryRunResult result={state.result} /> : null}
    </div>
  );
}

function DryRunResult({ result }: { result: DryRun }) {
  return (
    <div>
      <p>
        <strong data-testid="dry-run-count">{num(result.count)}</strong> of {num(result.nodes_evaluated)} resources match
        {result.errors > 0 ? (
          <>
            , <strong class="pol-errors" data-testid="dry-run-errors">{num(result.errors)}</strong> evaluation errors
          </>
        ) : (
          ", no evaluation errors"
        )}{" "}
        <span class="muted">
          ({result.evaluation === "fast" ? "column predicate" : "CEL interpreter"}, {milliseconds(result.duration_ms)})
        </span>
      </p>
      {result.crns.length > 0 ? (
        <>
          <h3 class="pol-sub">Sample matches{result.truncated ? ` (first ${result.crns.length})` : ""}</h3>
          <ul class="pol-crns">
            {result.crns.map((c) => (
              <li key={c}>
                <a href={href("node", [c])} title={c}>
                  {shortCrn(c)}
                </a>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {result.error_samples.length > 0 ? (
        <>
          <h3 class="pol-sub">Evaluation errors</h3>
          <ul class="pol-crns">
            {result.error_samples.map((e) => (
              <li key={e.crn}>
                <a href={href("node", [e.crn])} title={e.crn}>
                  {shortCrn(e.crn)}
                </a>
                : <span class="pol-errors">{e.message}</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}

const EMPTY: Required<RuleInput> = { id: "", condition: "", action: "warn", message: "", mode: "enforcing" };

/**
 * The editor. With `canAdd` false (a viewer) only the condition and its
 * dry-run are shown: trying a condition is a read.
 */
export function RuleEditor({ canAdd, onAdded }: { canAdd: boolean; onAdded: (id: string) => void }) {
  const [rule, setRule] = useState<Required<RuleInput>>(EMPTY);
  const [errors, setErrors] = useState<Partial<Record<RuleField, string>>>({});
  const [saving, setSaving] = useState(false);
  const dry = useDryRun(rule.condition);
  const set = (k: keyof RuleInput) => (e: Event) => {
    const v = (e.currentTarget as HTMLInputElement).value;
    setRule((r) => ({ ...r, [k]: v }));
    setErrors((x) => ({ ...x, [k]: undefined, form: undefined }));
  };

  async function add(e: Event) {
    e.preventDefault();
    setSaving(true);
    setErrors({});
    try {
      await post("/api/v1/policies", { rules: [{ ...rule, id: rule.id.trim() }] });
      const id = rule.id.trim();
      setRule(EMPTY);
      onAdded(id);
    } catch (err) {
      if (err instanceof ApiError) {
        setErrors({ [fieldOf(err.status, err.message, err.details)]: err.message });
      } else {
        setErrors({ form: err instanceof Error ? err.message : String(err) });
      }
    } finally {
      setSaving(false);
    }
  }

  const fieldError = (k: RuleField) =>
    errors[k] ? (
      <p class="pol-field-error" id={`pol-${k}-error`} role="alert">
        {errors[k]}
      </p>
    ) : null;
  const described = (k: RuleField, extra?: string) => [errors[k] ? `pol-${k}-error` : "", extra ?? ""].join(" ").trim() || undefined;
  const compileError = dry.kind === "compile";

  return (
    <form class="pol-editor" onSubmit={(e) => void add(e)} aria-label={canAdd ? "New rule" : "Try a condition"} noValidate>
      {canAdd ? (
        <div class="pol-row">
          <div class="pol-field">
            <label for="pol-id">Id</label>
            <input
              id="pol-id"
              value={rule.id}
              onInput={set("id")}
              required
              maxLength={128}
              aria-invalid={errors.id ? true : undefined}
              aria-describedby={described("id")}
              autocomplete="off"
              spellcheck={false}
            />
            {fieldError("id")}
          </div>
          <div class="pol-field">
            <label for="pol-action">Action</label>
            <select id="pol-action" value={rule.action} onChange={set("action")} aria-describedby={described("action")}>
              <option value="warn">warn (count only)</option>
              <option value="flag">flag (mark as waste)</option>
              <option value="block">block (keep out of remediation)</option>
            </select>
            {fieldError("action")}
          </div>
          <div class="pol-field">
            <label for="pol-mode">Mode</label>
            <select id="pol-mode" value={rule.mode} onChange={set("mode")} aria-describedby={described("mode")}>
              <option value="enforcing">enforcing</option>
              <option value="shadow">shadow (count and record only)</option>
            </select>
            {fieldError("mode")}
          </div>
        </div>
      ) : null}
      <div class="pol-field pol-condition">
        <label for="pol-condition">Condition (CEL)</label>
        <textarea
          id="pol-condition"
          class="mono"
          rows={4}
          value={rule.condition}
          onInput={set("condition")}
          spellcheck={false}
          aria-invalid={compileError || errors.condition ? true : undefined}
          aria-describedby={described("condition", compileError ? "pol-condition-help pol-dry-error" : "pol-condition-help")}
          placeholder={'kind == "volume" && provider == "aws"'}
        />
        <span id="pol-condition-help" class="muted pol-help">
          Bindings: crn, type, kind, service, provider, region, account, state, cost, tags, props, age_days, is_waste, risk_score,
          reachability, out, incoming.
        </span>
        {fieldError("condition")}
      </div>
      <DryRunPanel condition={rule.condition} state={dry} />
      {canAdd ? (
        <>
          <div class="pol-field pol-message">
            <label for="pol-message">Message</label>
            <input id="pol-message" value={rule.message} onInput={set("message")} maxLength={1024} aria-describedby={described("message")} />
            {fieldError("message")}
          </div>
          {fieldError("form")}
          <div class="pol-actions">
            <button type="submit" class="primary" disabled={saving || rule.id.trim() === "" || rule.condition.trim() === ""}>
              {saving ? "Adding…" : "Add rule"}
            </button>
          </div>
        </>
      ) : null}
    </form>
  );
}

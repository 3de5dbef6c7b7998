// Importing a policy pack's rules. The daemon has no endpoint that installs
// a pack (`svc policy install DIR` copies one into the data directory on
// the daemon's host; the registry is not built yet), so this reads a pack's
// rule file, pasted or chosen, and adds each rule through
// `POST /api/v1/policies`, one request per rule, showing each rule's result.
import { useMemo, useState } from "preact/hooks";
import { ApiError, post } from "../api/client";
import { parsePack, type RuleInput, validPrefix } from "./policies";

interface Outcome {
  id: string;
  ok: boolean;
  text: string;
}

export function PackImport({ onImported }: { onImported: () => void }) {
  const [text, setText] = useState("");
  const [prefix, setPrefix] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcomes, setOutcomes] = useState<Outcome[]>([]);
  const pack = useMemo(() => (text.trim() === "" ? null : parsePack(text)), [text]);
  const prefixOk = validPrefix(prefix);

  async function readFile(e: Event) {
    const f = (e.currentTarget as HTMLInputElement).files?.[0];
    if (!f) return;
    setText(await f.text());
    setOutcomes([]);
  }

  async function importAll() {
    if (!pack) return;
    setBusy(true);
    const done: Outcome[] = [];
    for (const r of pack.rules) {
      const rule: RuleInput = { ...r, id: prefix + r.id };
      try {
        const res = await post("/api/v1/policies", { rules: [rule] });
        const added = res.rules[0];
        done.push({ id: rule.id, ok: true, text: `added, ${added?.mode ?? rule.mode ?? "enforcing"}${added ? (added.evaluation === "fast" ? ", column predicate" : ", CEL interpreter") : ""}` });
      } catch (err) {
        const msg = err instanceof ApiError ? `${err.message} (${err.status} ${err.code})` : String(err);
        done.push({ id: rule.id, ok: false, text: msg });
      }
      setOutcomes(done.slice());
    }
    setBusy(false);
    onImported();
  }

  const added = outcomes.filter((o) => o.ok).length;
  return (
    <div class="pol-import">
      <p class="muted">
        The daemon installs a whole pack only from its host (<code>svc policy install DIR</code>, into <code>$SVC_DATA_DIR/policies</code>;
        its rules are then named <code>&lt;pack&gt;/&lt;id&gt;</code> and removed with the pack). Here a pack’s rule file (YAML as in{" "}
        <code>policies/</code>, or JSON) is read and each rule is added as a rule of its own, one request per rule.
      </p>
      <div class="pol-row">
        <div class="pol-field">
          <label for="pol-pack-file">Rule file</label>
          <input id="pol-pack-file" type="file" accept=".yaml,.yml,.json,application/json,text/yaml" onChange={(e) => void readFile(e)} />
        </div>
        <div class="pol-field">
          <label for="pol-pack-prefix">Id prefix</label>
          <input
            id="pol-pack-prefix"
            value={prefix}
            onInput={(e) => setPrefix((e.currentTarget as HTMLInputElement).value)}
            placeholder="cost-hygiene."
            aria-invalid={prefixOk ? undefined : true}
            aria-describedby="pol-pack-prefix-help"
            spellcheck={false}
          />
          <span id="pol-pack-prefix-help" class={prefixOk ? "muted pol-help" : "pol-field-error"}>
            {prefixOk ? "Optional, put before each rule’s id." : "Letters, digits, ‘.’, ‘_’, ‘-’ and ‘:’ only."}
          </span>
        </div>
      </div>
      <div class="pol-field">
        <label for="pol-pack-text">Or paste it</label>
        <textarea
          id="pol-pack-text"
          class="mono"
          rows={6}
          value={text}
          spellcheck={false}
          onInput={(e) => {
            setText((e.currentTarget as HTMLTextAreaElement).value);
            setOutcomes([]);
          }}
          placeholder={"rules:\n  - id: gp2-volumes\n    condition: kind == \"volume\" && props.volume_type == \"gp2\"\n    action: warn\n    message: gp3 is cheaper"}
        />
      </div>
      {pack ? (
        <div aria-live="polite">
          <p>
            {pack.rules.length} {pack.rules.length === 1 ? "rule" : "rules"} read{pack.name ? ` from pack ${pack.name}` : ""}
            {pack.rules.length > 0 ? `: ${pack.rules.map((r) => prefix + r.id).join(", ")}` : ""}.
          </p>
          {pack.problems.length > 0 ? (
            <ul class="pol-problems">
              {pack.problems.map((p) => (
                <li key={p} class="pol-field-error">
                  {p}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      <div class="pol-actions">
        <button type="button" class="primary" disabled={busy || !pack || pack.rules.length === 0 || !prefixOk} onClick={() => void importAll()}>
          {busy ? "Adding…" : `Add ${pack?.rules.length ?? 0} rules`}
        </button>
      </div>
      {outcomes.length > 0 ? (
        <div aria-live="polite">
          <p>
            {added} of {outcomes.length} added{busy ? "…" : "."}
          </p>
          <table class="table" data-testid="import-results">
            <caption class="sr-only">Result of each rule</caption>
            <thead>
              <tr>
                <th scope="col">Rule</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {outcomes.map((o) => (
                <tr key={o.id}>
                  <td class="mono">{o.id}</td>
                  <td class={o.ok ? "pol-ok" : "pol-errors"}>{o.text}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}

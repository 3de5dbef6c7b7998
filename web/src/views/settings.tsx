// Settings: who is signed in; the configuration (edited by admins, read by
// everyone else); the plugins with their verification and the active
// toggle; and, for admins on a daemon that manages them, the access tokens.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, post, put } from "../api/client";
import { ROLES, type Role, type Schemas } from "../api/types";
import { useApp, useCan } from "../context";
import { relative } from "../lib/format";
import {
  configPatch,
  createdText,
  createToken,
  type JsonObject,
  listTokens,
  type NewToken,
  parseConfig,
  patchKeys,
  revokeToken,
  type TokenInfo,
  tokenNameProblem,
} from "../lib/settings-data";
import { Card, Confirm, ErrorBox, Loading, Table, type TableColumn, useAsync } from "../lib/ui";
import type { ViewProps } from ".";

type Plugin = Schemas["Plugin"];

const ROLE_CAN: Record<Role, string> = {
  viewer: "read everything, change nothing",
  operator: "decide remediations, quarantine, ignore, edit policies and start scans",
  admin: "everything an operator can, and change the configuration, plugins and tokens",
};

export function Settings(_props: ViewProps) {
  const { session } = useApp();
  const admin = useCan("admin");
  return (
    <div class="settings">
      <h1>Settings</h1>
      <Card title="Signed in">
        <p data-testid="signed-in">
          As <strong>{session.name}</strong> with the role <span class={`badge role-badge`}>{session.role}</span>: you may{" "}
          {ROLE_CAN[session.role]}.
        </p>
      </Card>
      <ConfigCard admin={admin} role={session.role} />
      <PluginsCard admin={admin} />
      {admin ? <TokensCard /> : null}
    </div>
  );
}

function pretty(v: unknown): string {
  return JSON.stringify(v, null, 2);
}

function ConfigCard({ admin, role }: { admin: boolean; role: Role }) {
  const config = useAsync((signal) => get("/api/v1/config", { signal }) as Promise<unknown> as Promise<JsonObject>, []);
  return (
    <Card title="Configuration">
      {config.error && !config.data ? <ErrorBox error={config.error} /> : null}
      {!config.data && !config.error ? <Loading what="the configuration" /> : null}
      {config.data ? (
        admin ? (
          <ConfigEditor base={config.data} />
        ) : (
          <>
            <p class="notice" role="note">
              Read only: your role ({role}) cannot change the configuration; an admin can.
            </p>
            <pre class="config-view" data-testid="config-view" tabIndex={0} aria-label="Configuration (JSON)">
              {pretty(config.data)}
            </pre>
          </>
        )
      ) : null}
      <p class="muted">Keys absent from the configuration file take their defaults.</p>
    </Card>
  );
}

function ConfigEditor({ base: initial }: { base: JsonObject }) {
  const [base, setBase] = useState(initial);
  const [text, setText] = useState(() => pretty(initial));
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const parsed = useMemo(() => parseConfig(text), [text]);
  const patch = parsed.ok ? configPatch(base, parsed.value) : null;
  const changes = patch ? patchKeys(patch) : [];
  const save = () => {
    if (!patch || changes.length === 0) return;
    setSaving(true);
    setError(null);
    setSaved(null);
    (put("/api/v1/config", patch as never) as Promise<unknown>).then(
      (after) => {
        const next = (after ?? {}) as JsonObject;
        setBase(next);
        setText(pretty(next));
        setSaved(`Saved: ${changes.map((c) => c.key).join(", ")}.`);
        setSaving(false);
      },
      (e: unknown) => {
        setError(e instanceof Error ? e : new Error(String(e)));
        setSaving(false);
      },
    );
  };
  return (
    <form
      class="config-editor"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <label for="config-text">Configuration (JSON)</label>
      <textarea
        id="config-text"
        spellcheck={false}
        rows={Math.min(30, Math.max(8, text.split("\n").length + 1))}
        value={text}
        aria-invalid={!parsed.ok}
        aria-describedby="config-check"
        onInput={(e) => {
          setText((e.target as HTMLTextAreaElement).value);
          setSaved(null);
        }}
      />
      <div id="config-check" class={parsed.ok ? "muted" : "error-text"} aria-live="polite">
        {parsed.ok
          ? changes.length === 0
            ? "No changes."
            : `${changes.length} change${changes.length > 1 ? "s" : ""} to send: ${changes
                .map((c) => (c.value === null ? `${c.key} (back to its default)` : c.key))
                .join(", ")}.`
          : parsed.error}
      </div>
      {error ? <ErrorBox error={error} /> : null}
      {saved ? (
        <div class="notice" role="status">
          {saved}
        </div>
      ) : null}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={!parsed.ok || changes.length === 0 || saving}>
          {saving ? "Saving…" : "Save"}
        </button>
        <button
          type="button"
          disabled={saving || text === pretty(base)}
          onClick={() => {
            setText(pretty(base));
            setError(null);
          }}
        >
          Discard changes
        </button>
      </div>
      {patch && changes.length > 0 ? (
        <details>
          <summary>Request body</summary>
          <pre class="config-view">{pretty(patch)}</pre>
        </details>
      ) : null}
    </form>
  );
}

function StatusBadge({ status }: { status: string }) {
  return <span class={`badge ${status === "verified" ? "good" : "bad"}`}>{status}</span>;
}

function PluginsCard({ admin }: { admin: boolean }) {
  const plugins = useAsync((signal) => get("/api/v1/plugins", { signal }), []);
  const [rows, setRows] = useState<Plugin[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<Error | null>(null);
  useEffect(() => setRows(plugins.data), [plugins.data]);
  const toggle = (p: Plugin) => {
    setBusy(p.name);
    setError(null);
    post("/api/v1/plugins/toggle", { name: p.name }).then(
      (now) => {
        setRows((rs) => rs?.map((r) => (r.name === now.name ? now : r)) ?? null);
        setBusy(null);
      },
      (e: unknown) => {
        setError(e instanceof Error ? e : new Error(String(e)));
        setBusy(null);
      },
    );
  };
  const columns: TableColumn<Plugin>[] = [
    {
      key: "name",
      header: "Plugin",
      cell: (p) => (
        <>
          <span class="plugin-swatch" style={{ background: /^#[0-9a-fA-F]{3,8}$/.test(p.color) ? p.color : "transparent" }} aria-hidden="true" />
          {p.display_name} <span class="muted">({p.name})</span>
        </>
      ),
      sort: (p) => p.name,
    },
    { key: "category", header: "Category", cell: (p) => p.category, sort: (p) => p.category },
    { key: "role", header: "Role", cell: (p) => p.role, sort: (p) => p.role },
    { key: "status", header: "Verification", cell: (p) => <StatusBadge status={p.status} />, sort: (p) => p.status },
    { key: "path", header: "Binary", cell: (p) => <code>{p.path}</code> },
    {
      key: "active",
      header: "Active",
      sort: (p) => (p.active ? 1 : 0),
      cell: (p) =>
        admin ? (
          <label class="switch">
            <input
              type="checkbox"
              role="switch"
              checked={p.active}
              disabled={busy !== null}
              aria-label={`${p.display_name} active`}
              data-plugin={p.name}
              onChange={() => toggle(p)}
            />
            <span aria-hidden="true">{p.active ? "active" : "inactive"}</span>
          </label>
        ) : p.active ? (
          "active"
        ) : (
          "inactive"
        ),
    },
  ];
  return (
    <Card title="Plugins">
      {plugins.error && !rows ? <ErrorBox error={plugins.error} /> : null}
      {!rows && !plugins.error ? <Loading what="plugins" /> : null}
      {error ? <ErrorBox error={error} /> : null}
      {rows ? (
        <>
          <Table
            columns={columns}
            rows={rows}
            rowKey={(p) => p.name}
            caption="Installed plugins"
            empty="No plugin is installed (svc plugins install-local PATH installs one)."
          />
          <p class="muted">
            {admin
              ? "Switching a plugin on or off takes effect from the next scan."
              : "Read only: only an admin can switch plugins on or off."}
          </p>
        </>
      ) : null}
    </Card>
  );
}

function TokensCard() {
  const { session } = useApp();
  const tokens = useAsync((signal) => listTokens(signal), []);
  const [list, setList] = useState<TokenInfo[] | null>(null);
  const [fresh, setFresh] = useState<NewToken | null>(null);
  const [revoking, setRevoking] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  useEffect(() => setList(tokens.data), [tokens.data]);
  // A daemon without token management: no panel at all.
  if (tokens.data === null && !tokens.loading && !tokens.error) return null;
  const revoke = (name: string) => {
    setBusy(true);
    setError(null);
    revokeToken(name).then(
      () => {
        setList((l) => l?.filter((t) => t.name !== name) ?? null);
        setRevoking(null);
        setBusy(false);
      },
      (e: unknown) => {
        setError(e instanceof Error ? e : new Error(String(e)));
        setRevoking(null);
        setBusy(false);
      },
    );
  };
  const now = Date.now() / 1000;
  const columns: TableColumn<TokenInfo>[] = [
    { key: "name", header: "Name", cell: (t) => t.name, sort: (t) => t.name },
    { key: "role", header: "Role", cell: (t) => t.role, sort: (t) => t.role },
    {
      key: "created",
      header: "Created",
      cell: (t) => (
        <span title={createdText(t.created)}>{typeof t.created === "number" ? relative(t.created, now) : createdText(t.created)}</span>
      ),
      sort: (t) => String(t.created),
    },
    {
      key: "revoke",
      header: "Revoke",
      cell: (t) =>
        t.name === session.name ? (
          <span class="muted">signed in with it</span>
        ) : (
          <button type="button" class="danger" onClick={() => setRevoking(t.name)} aria-label={`Revoke ${t.name}`}>
            Revoke
          </button>
        ),
    },
  ];
  return (
    <Card title="Access tokens">
      {tokens.error && !list ? <ErrorBox error={tokens.error} /> : null}
      {!list && !tokens.error ? <Loading what="tokens" /> : null}
      {error ? <ErrorBox error={error} /> : null}
      {fresh ? <FreshToken token={fresh} onDone={() => setFresh(null)} /> : null}
      {list ? <Table columns={columns} rows={list} rowKey={(t) => t.name} caption="Access tokens" empty="No token besides the daemon's own." /> : null}
      <NewTokenForm
        onCreated={(t) => {
          setFresh(t);
          setList((l) => [...(l ?? []).filter((x) => x.name !== t.name), { name: t.name, role: t.role, created: t.created }]);
        }}
      />
      {revoking ? (
        <Confirm title={`Revoke ${revoking}?`} confirmLabel="Revoke" busy={busy} onConfirm={() => revoke(revoking)} onCancel={() => setRevoking(null)}>
          Whoever holds this token is signed out and cannot sign in with it again.
        </Confirm>
      ) : null}
    </Card>
  );
}

function NewTokenForm({ onCreated }: { onCreated: (t: NewToken) => void }) {
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const problem = tokenNameProblem(name);
  return (
    <form
      class="toolbar token-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (problem) return;
        setBusy(true);
        setError(null);
        createToken(name.trim(), role).then(
          (t) => {
            setBusy(false);
            setName("");
            onCreated(t);
          },
          (err: unknown) => {
            setBusy(false);
            setError(err instanceof Error ? err : new Error(String(err)));
          },
        );
      }}
    >
      <label>
        New token's name
        <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} autoComplete="off" />
      </label>
      <label>
        Role
        <select value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="primary" disabled={busy || problem !== null}>
        Create token
      </button>
      {error ? <ErrorBox error={error} /> : null}
    </form>
  );
}

function FreshToken({ token, onDone }: { token: NewToken; onDone: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  const ref = useRef<HTMLInputElement>(null);
  const copy = () => {
    const fallback = () => {
      ref.current?.select();
      setCopied("Selected: press Ctrl+C to copy.");
    };
    if (navigator.clipboard) navigator.clipboard.writeText(token.token).then(() => setCopied("Copied."), fallback);
    else fallback();
  };
  return (
    <div class="notice fresh-token" role="status">
      <p>
        Token <strong>{token.name}</strong> ({token.role}) created. Copy it now: it is shown only once.
      </p>
      <div class="toolbar">
        <label>
          Token
          <input ref={ref} class="mono" readOnly value={token.token} size={48} onFocus={(e) => (e.target as HTMLInputElement).select()} />
        </label>
        <button type="button" onClick={copy}>
          Copy
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
      {copied ? <span class="muted">{copied}</span> : null}
    </div>
  );
}

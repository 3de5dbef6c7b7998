// Settings: who is signed in; the configuration (edited by admins, read by
// everyone else); the plugins with their verification and the active
// toggle; the registry (search by everyone, install and remove by admins);
// and, for admins on a daemon that manages them, the access tokens.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, post, put } from "../api/client";
import { ROLES, type Role, type Schemas } from "../api/types";
import { useApp, useCan } from "../context";
import { relative } from "../lib/format";
import {
  byNameThenVersion,
  type InstalledPackage,
  installTarget,
  listingNote,
  packageState,
  type RegistryListing,
  type RegistryPackage,
  registryUrl,
} from "../lib/registry";
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
      <RegistryCard admin={admin} />
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

function errorOf(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

function RegistryCard({ admin }: { admin: boolean }) {
  const config = useAsync((signal) => get("/api/v1/config", { signal }) as Promise<unknown> as Promise<JsonObject>, []);
  const installed = useAsync((signal) => get("/api/v1/registry/installed", { signal }), []);
  const [packages, setPackages] = useState<InstalledPackage[] | null>(null);
  const [q, setQ] = useState("");
  const [listing, setListing] = useState<RegistryListing | null>(null);
  const [searching, setSearching] = useState(false);
  const [searchError, setSearchError] = useState<Error | null>(null);
  const [activate, setActivate] = useState(true);
  const [busy, setBusy] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [removing, setRemoving] = useState<string | null>(null);
  useEffect(() => setPackages(installed.data), [installed.data]);
  const url = registryUrl(config.data);
  const search = (refresh: boolean) => {
    setSearching(true);
    setSearchError(null);
    const query: { q: string; refresh?: boolean } = { q: q.trim() };
    if (refresh) query.refresh = true;
    get("/api/v1/registry/search", { query }).then(
      (l) => {
        setListing(l);
        setSearching(false);
      },
      (e: unknown) => {
        setSearchError(errorOf(e));
        setSearching(false);
      },
    );
  };
  // The index is listed as soon as a registry is configured.
  useEffect(() => {
    if (url) search(false);
  }, [url]);
  const reloadInstalled = () =>
    get("/api/v1/registry/installed").then(setPackages, (e: unknown) => setError(errorOf(e)));
  const install = (p: RegistryPackage) => {
    const name = installTarget(p);
    setBusy(name);
    setError(null);
    setDone(null);
    post("/api/v1/registry/install", { name, activate: p.type === "plugin" ? activate : false }).then(
      (outcome) => {
        setBusy(null);
        setDone(outcome.message);
        setListing((l) =>
          l ? { ...l, packages: l.packages.map((x) => (x.name === p.name ? { ...x, installed_version: p.version } : x)) } : l,
        );
        void reloadInstalled();
      },
      (e: unknown) => {
        setBusy(null);
        setError(errorOf(e));
      },
    );
  };
  const remove = (name: string) => {
    setBusy(name);
    setError(null);
    setDone(null);
    post("/api/v1/registry/remove", { name }).then(
      (was) => {
        setBusy(null);
        setRemoving(null);
        setDone(`Removed ${was.name} ${was.version}.`);
        // The listing's installed versions as the daemon now has them.
        if (listing) search(false);
        void reloadInstalled();
      },
      (e: unknown) => {
        setBusy(null);
        setRemoving(null);
        setError(errorOf(e));
      },
    );
  };
  const found: TableColumn<RegistryPackage>[] = [
    { key: "name", header: "Package", cell: (p) => p.name, sort: (p) => p.name },
    { key: "version", header: "Version", cell: (p) => p.version },
    { key: "type", header: "Type", cell: (p) => (p.role && p.type === "plugin" ? `${p.type} (${p.role})` : p.type), sort: (p) => p.type },
    {
      key: "category",
      header: "Category",
      cell: (p) => p.category ?? <span class="badge bad">unassigned</span>,
      sort: (p) => p.category ?? "",
    },
    { key: "description", header: "Description", cell: (p) => p.description },
    {
      key: "state",
      header: "State",
      cell: (p) => {
        const st = packageState(p);
        if (st.kind === "installed") return <span class="badge good">installed</span>;
        if (st.kind === "refused") return <span class="bad-text">{st.text}</span>;
        return (
          <>
            {st.text ? <span class="muted">{st.text} </span> : null}
            {admin ? (
              <button type="button" class="primary" disabled={busy !== null} onClick={() => install(p)} aria-label={`Install ${installTarget(p)}`}>
                Install
              </button>
            ) : null}
          </>
        );
      },
    },
  ];
  const kept: TableColumn<InstalledPackage>[] = [
    { key: "name", header: "Package", cell: (p) => p.name, sort: (p) => p.name },
    { key: "type", header: "Type", cell: (p) => p.type, sort: (p) => p.type },
    { key: "version", header: "Version", cell: (p) => p.version },
    { key: "category", header: "Category", cell: (p) => p.category, sort: (p) => p.category },
    { key: "source", header: "Source", cell: (p) => <code>{p.source}</code> },
    { key: "active", header: "Active", cell: (p) => (p.type === "plugin" ? (p.active ? "active" : "inactive") : "from the next scan") },
    {
      key: "remove",
      header: "Remove",
      cell: (p) =>
        admin ? (
          <button type="button" class="danger" disabled={busy !== null} onClick={() => setRemoving(p.name)} aria-label={`Remove ${p.name}`}>
            Remove
          </button>
        ) : (
          <span class="muted">admin only</span>
        ),
    },
  ];
  return (
    <Card title="Registry">
      {config.data && !url ? (
        <p class="muted" data-testid="registry-unset">
          No registry is configured: set <code>registry.url</code> (an http(s) URL or the path of an index file) in the
          configuration above.
        </p>
      ) : null}
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          search(false);
        }}
      >
        <label>
          Search the registry
          <input type="search" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} placeholder="name, description, type or category" />
        </label>
        <button type="submit" disabled={searching}>
          Search
        </button>
        <button type="button" disabled={searching} onClick={() => search(true)}>
          Fetch the index now
        </button>
        {admin ? (
          <label>
            <input type="checkbox" checked={activate} onChange={(e) => setActivate((e.target as HTMLInputElement).checked)} />
            Activate plugins once installed
          </label>
        ) : null}
      </form>
      {searchError ? <ErrorBox error={searchError} /> : null}
      {error ? <ErrorBox error={error} /> : null}
      {done ? (
        <p class="notice" role="status">
          {done}
        </p>
      ) : null}
      {searching ? <Loading what="the registry" /> : null}
      {listing ? (
        <>
          <p class="muted" data-testid="registry-source">
            {listingNote(listing)}
          </p>
          <Table
            columns={found}
            rows={byNameThenVersion(listing.packages)}
            rowKey={(p) => installTarget(p)}
            caption="Registry packages"
            empty={q.trim() ? `Nothing in the registry matches "${q.trim()}".` : "The registry lists no package."}
          />
        </>
      ) : null}
      {installed.error && !packages ? <ErrorBox error={installed.error} /> : null}
      {packages ? (
        <Table
          columns={kept}
          rows={packages}
          rowKey={(p) => `${p.type}:${p.name}`}
          caption="Installed packages"
          empty="Nothing is installed from the registry."
        />
      ) : null}
      {!admin ? <p class="muted">Read only: only an admin can install or remove packages.</p> : null}
      {removing ? (
        <Confirm
          title={`Remove ${removing}?`}
          confirmLabel="Remove"
          busy={busy !== null}
          onConfirm={() => remove(removing)}
          onCancel={() => setRemoving(null)}
        >
          A plugin is deactivated and its binary removed; a policy pack's rules stop from the next scan.
        </Confirm>
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

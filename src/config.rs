//! `config.toml`: the SPEC configuration keys nested by their dots.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;
use svc_engine::scan::ScanLimits;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub daemon: DaemonConfig,
    #[serde(default)]
    pub plugins: PluginsConfig,
    #[serde(default)]
    pub heuristics: HeuristicsConfig,
    /// `[oracle]`: `enabled` switches formal verification (default on),
    /// `trigger_threshold` (SPEC 2.9). Keys checked by `known_keys`.
    #[serde(default)]
    pub oracle: toml::Table,
    /// `[sau]`: `audit_bucket`, `audit_export_interval` and
    /// `audit_export_max_events` configure the compliance export
    /// ([`Config::export_settings`]). Keys checked by `known_keys`.
    #[serde(default)]
    pub sau: toml::Table,
    /// `[ai]`: `provider`, `model`, `router_model`, `api_key`, `base_url`,
    /// for the AI chat. Keys checked by `known_keys`.
    #[serde(default)]
    pub ai: toml::Table,
    /// `[iac]`: `terraform_states` (paths, relative to the data directory,
    /// or `s3://bucket/key` URLs of Terraform state files) and `repository`
    /// (the git repository of the Terraform code), for drift, the plan's
    /// code change and provenance. Keys checked by `known_keys`.
    #[serde(default)]
    pub iac: toml::Table,
    /// `[notify]`: Slack and generic webhooks ([`Config::notify_settings`]).
    #[serde(default)]
    pub notify: NotifyConfig,
    #[serde(default)]
    pub ledger: LedgerConfig,
    #[serde(default)]
    pub graph: GraphConfig,
    /// `[registry]`: where packages come from ([`RegistryConfig`]).
    #[serde(default)]
    pub registry: RegistryConfig,
    /// `[cluster]`: high availability through etcd ([`Config::cluster_settings`]);
    /// absent, the daemon runs alone.
    #[serde(default)]
    pub cluster: Option<ClusterConfig>,
    /// `[workers]`: sources scan workers run ([`WorkersConfig`]).
    #[serde(default)]
    pub workers: WorkersConfig,
}

/// `[cluster]` as written; [`Config::cluster_settings`] checks it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// etcd's client URLs (`https://etcd-1:2379`).
    #[serde(default)]
    pub endpoints: Vec<String>,
    /// This node's id, unique in the cluster.
    pub node_id: Option<String>,
    /// The base URL other nodes and clients reach this node's API at.
    pub advertise_url: Option<String>,
    /// The lease the leadership hangs on (`10s`): a dead leader is replaced
    /// within about this time.
    pub lease_ttl: Option<String>,
    /// The etcd key prefix of this cluster (`svc`).
    pub prefix: Option<String>,
    /// The object storage every node reaches, where the leader's graph
    /// store writes go for the standbys: `file:///dir` or
    /// `s3://bucket/prefix`.
    pub shared_store: Option<String>,
    /// etcd's TLS: the CA that signed its certificates, and this node's
    /// client certificate and key for mutual TLS.
    pub ca_file: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    /// The name etcd's certificate is checked against, when not the
    /// endpoint's host.
    pub server_name: Option<String>,
}

/// The checked `[cluster]` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSettings {
    pub endpoints: Vec<String>,
    pub node_id: String,
    pub advertise_url: String,
    pub lease_ttl: Duration,
    pub prefix: String,
    pub shared_store: String,
    pub tls: Option<ClusterTls>,
}

/// The PEM files of etcd's TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterTls {
    pub ca: std::path::PathBuf,
    pub cert: Option<std::path::PathBuf>,
    pub key: Option<std::path::PathBuf>,
    pub server_name: Option<String>,
}

/// The shortest and longest leader lease.
const MIN_LEASE_TTL: Duration = Duration::from_secs(2);
const MAX_LEASE_TTL: Duration = Duration::from_secs(300);

/// `[notify]` as written; [`Config::notify_settings`] checks it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// A Slack incoming-webhook URL.
    pub slack_webhook: Option<String>,
    /// Generic webhooks: `{ url, secret, name?, events? }`.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    /// The kinds sent (default: all of them).
    pub events: Option<Vec<String>>,
    /// A scan's waste must rise by more than this (monthly USD) for a
    /// `waste` notification.
    pub waste_threshold_usd: Option<f64>,
    /// How long one delivery attempt may take (default `10s`).
    pub timeout: Option<String>,
    /// Attempts per notification and destination (default 5).
    pub max_attempts: Option<i64>,
    /// The pause after a first failed attempt (default `1s`), doubled per
    /// further attempt up to `backoff_max` (default `30s`).
    pub backoff: Option<String>,
    pub backoff_max: Option<String>,
    /// The dashboard's address as people reach it, for links in messages.
    pub dashboard_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    pub url: String,
    /// The HMAC-SHA256 key of `X-Svc-Signature`.
    pub secret: String,
    /// Its name in metrics and answers (default `webhook-<n>`).
    pub name: Option<String>,
    /// The kinds it receives (default: `notify.events`).
    pub events: Option<Vec<String>>,
}

/// `[ledger]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerConfig {
    /// How long events are kept (`400d`); older ones are pruned, audited
    /// like a manual prune. Absent: every event is kept.
    pub retention: Option<String>,
}

/// `[graph]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphConfig {
    /// How far back `graph.redb` keeps the graph's history for time travel
    /// (`90d`). Absent: all of it.
    pub history_retention: Option<String>,
}

/// What the retention settings ask for: how long each store keeps its
/// history (`None`: everything), with the setting as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    pub ledger: Option<(Duration, String)>,
    pub graph: Option<(Duration, String)>,
}

/// `[registry]`: the package index and how it is fetched.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryConfig {
    /// The index: an `http(s)://` or `file://` URL, or a file path.
    #[serde(default)]
    pub url: String,
    /// Where the manifest of a release `owner/name@vX.Y.Z` is, with
    /// `{owner}`, `{name}` and `{version}` filled in.
    #[serde(default = "default_release_url")]
    pub release_url: String,
    /// How long the cached index answers before it is fetched again.
    #[serde(default = "default_registry_cache_ttl")]
    pub cache_ttl: String,
    /// Time for one fetch (the index, a manifest, a binary).
    #[serde(default = "default_registry_timeout")]
    pub download_timeout: String,
    /// Largest binary or pack file downloaded, in MiB.
    #[serde(default = "default_registry_max_download_mb")]
    pub max_download_mb: i64,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            url: String::new(),
            release_url: default_release_url(),
            cache_ttl: default_registry_cache_ttl(),
            download_timeout: default_registry_timeout(),
            max_download_mb: default_registry_max_download_mb(),
        }
    }
}

fn default_release_url() -> String {
    "https://github.com/{owner}/{name}/releases/download/{version}/manifest.json".into()
}

fn default_registry_cache_ttl() -> String {
    "1h".into()
}

fn default_registry_timeout() -> String {
    "60s".into()
}

fn default_registry_max_download_mb() -> i64 {
    256
}

/// `[registry]` checked: what the registry client runs with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrySettings {
    pub url: String,
    pub release_url: String,
    pub cache_ttl: Duration,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl RegistryConfig {
    pub fn settings(&self) -> anyhow::Result<RegistrySettings> {
        if !self.url.trim().is_empty() {
            svc_ingest::registry::location(&self.url).map_err(|e| anyhow::anyhow!("registry.url: {e}"))?;
        }
        let template = self.release_url.trim();
        if !(template.starts_with("http://") || template.starts_with("https://") || template.starts_with("file://"))
            || !template.contains("{version}")
        {
            bail!(
                "registry.release_url must be an http(s):// or file:// URL with {{owner}}, {{name}} and {{version}} \
                 placeholders, not {template:?}"
            );
        }
        let cache_ttl = humantime::parse_duration(&self.cache_ttl)
            .with_context(|| format!("registry.cache_ttl {:?} is not a duration", self.cache_ttl))?;
        if cache_ttl > MAX_SETTING_DURATION {
            bail!("registry.cache_ttl must be at most 365d, got {:?}", self.cache_ttl);
        }
        let timeout = at_least_a_second("registry.download_timeout", &self.download_timeout)?;
        let max_bytes = match u64::try_from(self.max_download_mb) {
            Ok(mb) if (1..=4096).contains(&mb) => mb * 1024 * 1024,
            _ => bail!(
                "registry.max_download_mb must be an integer from 1 to 4096, not {}",
                self.max_download_mb
            ),
        };
        Ok(RegistrySettings {
            url: self.url.trim().to_owned(),
            release_url: template.to_owned(),
            cache_ttl,
            timeout,
            max_bytes,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// Interval between scans, a duration string (`5m`, `1h`).
    #[serde(default = "default_scan_interval")]
    pub scan_interval: String,
    /// How long one source may scan before it is cancelled (`svc scan
    /// --timeout` overrides it for one scan).
    #[serde(default = "default_scan_timeout")]
    pub scan_timeout: String,
    /// Nodes one source may report in one scan; past it, that source's
    /// scan fails (and its resources are kept).
    #[serde(default = "default_scan_max_nodes")]
    pub scan_max_nodes: i64,
    /// Edges one source may report in one scan, likewise.
    #[serde(default = "default_scan_max_edges")]
    pub scan_max_edges: i64,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            scan_interval: default_scan_interval(),
            scan_timeout: default_scan_timeout(),
            scan_max_nodes: default_scan_max_nodes(),
            scan_max_edges: default_scan_max_edges(),
        }
    }
}

fn default_scan_max_nodes() -> i64 {
    ScanLimits::DEFAULT_MAX_NODES as i64
}

fn default_scan_max_edges() -> i64 {
    ScanLimits::DEFAULT_MAX_EDGES as i64
}

fn default_scan_interval() -> String {
    "5m".into()
}

fn default_scan_timeout() -> String {
    "10m".into()
}

/// `[heuristics]`: which built-in waste rules run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeuristicsConfig {
    /// Whether the built-in rules run at all (heuristic plugins still do).
    #[serde(default = "yes")]
    pub builtin: bool,
    /// Built-in rules switched off by name (`aws-ebs-gp2-to-gp3`).
    #[serde(default)]
    pub disabled: Vec<String>,
}

impl Default for HeuristicsConfig {
    fn default() -> Self {
        HeuristicsConfig {
            builtin: true,
            disabled: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

impl HeuristicsConfig {
    /// The engine's rule selection; an unknown rule name is an error.
    pub fn selection(&self) -> anyhow::Result<svc_engine::heuristics::builtin::Selection> {
        for name in &self.disabled {
            if svc_engine::heuristics::builtin::rule(name).is_none() {
                bail!("heuristics.disabled names {name:?}, which is not a built-in rule");
            }
        }
        Ok(svc_engine::heuristics::builtin::Selection {
            enabled: self.builtin,
            disabled: self.disabled.clone(),
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Plugins that are activated.
    #[serde(default)]
    pub active: Vec<String>,
    /// Scan configuration per plugin (`[plugins.config.aws] region = "us-east-1"`),
    /// handed to the plugin's Scan as strings.
    #[serde(default)]
    pub config: std::collections::BTreeMap<String, toml::Table>,
}

impl PluginsConfig {
    /// The scan configuration of one plugin, values as strings. A nested
    /// table gives dotted keys: `endpoint_url.eu-west-1 = "https://..."`
    /// (a dotted key, or an `[plugins.config.aws.endpoint_url]` table)
    /// reaches the plugin as key `endpoint_url.eu-west-1`.
    pub fn scan_config(&self, plugin: &str) -> std::collections::BTreeMap<String, String> {
        let mut out = std::collections::BTreeMap::new();
        if let Some(table) = self.config.get(plugin) {
            flatten_into(&mut out, "", table);
        }
        out
    }
}

/// `[workers]`: sources that scan workers (`svc worker`) run, and how the
/// daemon reaches them: over mutual TLS, with its own certificate.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkersConfig {
    /// The daemon's client certificate, its key, and the CA that signs
    /// the workers' certificates (PEM files).
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub tls_ca: Option<String>,
    /// Workers by id, each `host:port`: the live set when no etcd cluster
    /// keeps one.
    #[serde(default)]
    pub members: std::collections::BTreeMap<String, String>,
    /// The sources, by name.
    #[serde(default)]
    pub sources: std::collections::BTreeMap<String, RemoteSourceConfig>,
}

/// `[workers.sources.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteSourceConfig {
    /// The plugin that scans it on the worker (`svc-plugin-<plugin>`).
    pub plugin: String,
    /// Providers it answers for (default: the plugin's name).
    pub providers: Option<Vec<String>>,
    /// The member (of `members`) that runs it when no etcd cluster
    /// assigns sources.
    pub worker: Option<String>,
    /// Its scan settings, handed to the plugin's Scan as strings (as
    /// `[plugins.config.<plugin>]`).
    #[serde(default)]
    pub config: toml::Table,
}

/// `[workers]` checked: the remote sources with their scan settings, the
/// assignment the static members give, and the TLS files (read when the
/// daemon applies them, not here).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkersSettings {
    pub tls: Option<svc_ingest::remote::TlsFiles>,
    pub sources: Vec<(
        svc_ingest::remote::RemoteSpec,
        std::collections::BTreeMap<String, String>,
    )>,
    pub assignment: svc_ingest::remote::Assignment,
    /// Each source's `worker`, by source name: in a cluster, the member
    /// that runs it while that member is live.
    pub pins: std::collections::BTreeMap<String, String>,
}

impl WorkersConfig {
    /// Checks `[workers]`; `active` is `plugins.active`, whose names a
    /// remote source may not take (nor `mock`): scan settings and reports
    /// go by source name. In a cluster (`clustered`) a source's `worker`
    /// may name a worker that registers in etcd rather than one of
    /// `members`.
    pub fn check(&self, active: &[String], clustered: bool) -> anyhow::Result<WorkersSettings> {
        use svc_ingest::remote::{RemoteSpec, TlsFiles, WorkerAddr, valid_plugin_name, valid_source_name};
        for (id, addr) in &self.members {
            if !valid_source_name(id) {
                bail!("workers.members: invalid worker id {id:?}: 1 to 128 letters, digits, '-', '_', '.', ':'");
            }
            let port = addr.rsplit_once(':').map(|(host, port)| (host, port.parse::<u16>()));
            if !matches!(port, Some((host, Ok(p))) if !host.is_empty() && p > 0) || addr.contains('/') {
                bail!("workers.members.{id}: {addr:?} is not host:port");
            }
        }
        let mut out = WorkersSettings::default();
        for (name, source) in &self.sources {
            let key = format!("workers.sources.{name}");
            if !valid_source_name(name) {
                bail!("{key}: invalid source name: 1 to 128 letters, digits, '-', '_', '.', ':'");
            }
            if name == "mock" || active.contains(name) {
                bail!("{key}: {name:?} is the name of a local source already; choose another name");
            }
            if !valid_plugin_name(&source.plugin) {
                bail!("{key}.plugin {:?}: letters, digits, '-' and '_'", source.plugin);
            }
            let providers = source.providers.clone().unwrap_or_else(|| vec![source.plugin.clone()]);
            if providers.is_empty() || providers.iter().any(|p| p.trim().is_empty()) {
                bail!("{key}.providers: give at least one provider name, none empty");
            }
            if let Some(id) = &source.worker {
                match self.members.get(id) {
                    Some(addr) => {
                        out.assignment.insert(
                            name.clone(),
                            WorkerAddr {
                                id: id.clone(),
                                addr: addr.clone(),
                            },
                        );
                    }
                    None if clustered && valid_source_name(id) => {}
                    None if clustered => bail!("{key}.worker {id:?}: invalid worker id"),
                    None => bail!("{key}.worker {id:?} is not in workers.members"),
                }
                out.pins.insert(name.clone(), id.clone());
            }
            let mut config = std::collections::BTreeMap::new();
            flatten_into(&mut config, "", &source.config);
            let spec = RemoteSpec {
                name: name.clone(),
                plugin: source.plugin.clone(),
                providers,
            };
            out.sources.push((spec, config));
        }
        out.tls = match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (Some(cert), Some(key), Some(ca)) => Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
                ca: ca.into(),
            }),
            (None, None, None) if self.sources.is_empty() => None,
            _ => bail!("workers.tls_cert, workers.tls_key and workers.tls_ca are needed together to reach workers"),
        };
        Ok(out)
    }
}

/// Writes each value of `table` under its key after `prefix`, a string as
/// its text and anything else (numbers, lists) as TOML; tables recurse.
fn flatten_into(out: &mut std::collections::BTreeMap<String, String>, prefix: &str, table: &toml::Table) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(inner) => flatten_into(out, &format!("{key}."), inner),
            toml::Value::String(s) => {
                out.insert(key, s.clone());
            }
            other => {
                out.insert(key, other.to_string());
            }
        }
    }
}

impl Config {
    /// Reads the file; a missing file is the default configuration, a
    /// malformed one an error naming the file.
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        Config::validate_text(&text).with_context(|| format!("invalid configuration {}", path.display()))
    }

    /// Parses and checks configuration text.
    pub fn validate_text(text: &str) -> anyhow::Result<Config> {
        let config: Config = toml::from_str(text)?;
        config.known_keys()?;
        config.scan_interval()?;
        config.scan_limits()?;
        config.heuristics.selection()?;
        config.oracle_enabled()?;
        config.export_settings()?;
        config.notify_settings()?;
        config.retention()?;
        config.registry.settings()?;
        config.cluster_settings()?;
        config.workers_settings()?;
        Ok(config)
    }

    /// `[workers]`, checked as the presence of `[cluster]` asks.
    pub fn workers_settings(&self) -> anyhow::Result<WorkersSettings> {
        self.workers.check(&self.plugins.active, self.cluster.is_some())
    }

    /// `[cluster]`, checked: `None` when the section is absent.
    pub fn cluster_settings(&self) -> anyhow::Result<Option<ClusterSettings>> {
        let Some(c) = &self.cluster else { return Ok(None) };
        if c.endpoints.is_empty() {
            bail!("cluster.endpoints is empty: list etcd's client URLs, e.g. [\"https://etcd-1:2379\"]");
        }
        if let Some(e) = c
            .endpoints
            .iter()
            .find(|e| e.trim().is_empty() || e.contains(char::is_whitespace))
        {
            bail!("cluster.endpoints: {e:?} is not an etcd URL");
        }
        let node_id = c.node_id.clone().unwrap_or_default();
        if node_id.is_empty() || node_id.contains('/') || node_id.contains(char::is_whitespace) {
            bail!("cluster.node_id {node_id:?}: give this node a unique id without '/' or spaces");
        }
        let advertise_url = c.advertise_url.clone().unwrap_or_default();
        if !(advertise_url.starts_with("http://") || advertise_url.starts_with("https://")) {
            bail!("cluster.advertise_url {advertise_url:?}: the http:// or https:// URL this node's API is reached at");
        }
        let ttl_text = c.lease_ttl.as_deref().unwrap_or("10s");
        let lease_ttl = humantime::parse_duration(ttl_text)
            .with_context(|| format!("cluster.lease_ttl {ttl_text:?} is not a duration"))?;
        if !(MIN_LEASE_TTL..=MAX_LEASE_TTL).contains(&lease_ttl) || lease_ttl.subsec_nanos() != 0 {
            bail!("cluster.lease_ttl must be whole seconds from 2s to 5m, got {ttl_text:?}");
        }
        let prefix = c.prefix.clone().unwrap_or_else(|| "svc".to_owned());
        if prefix.is_empty() {
            bail!("cluster.prefix is empty");
        }
        let shared_store = c.shared_store.clone().unwrap_or_default();
        if !(shared_store.starts_with("file:///") || shared_store.starts_with("s3://")) {
            bail!(
                "cluster.shared_store {shared_store:?}: the object storage every node reaches, where the leader's graph store writes go for the standbys: file:///dir (a directory every node mounts) or s3://bucket/prefix"
            );
        }
        let path = |v: &Option<String>| v.as_ref().filter(|p| !p.is_empty()).map(std::path::PathBuf::from);
        let (ca, cert, key) = (path(&c.ca_file), path(&c.cert_file), path(&c.key_file));
        if cert.is_some() != key.is_some() {
            bail!("cluster.cert_file and cluster.key_file go together: mutual TLS needs both");
        }
        let tls = match ca {
            Some(ca) => Some(ClusterTls {
                ca,
                cert,
                key,
                server_name: c.server_name.clone(),
            }),
            None if cert.is_some() => bail!("cluster.cert_file needs cluster.ca_file, the CA of etcd's certificates"),
            None => None,
        };
        Ok(Some(ClusterSettings {
            endpoints: c.endpoints.clone(),
            node_id,
            advertise_url,
            lease_ttl,
            prefix,
            shared_store,
            tls,
        }))
    }

    /// `ledger.retention` and `graph.history_retention`: each a duration
    /// of at least [`MIN_RETENTION`] (longer than a year is allowed).
    pub fn retention(&self) -> anyhow::Result<Retention> {
        let setting = |key: &str, value: &Option<String>| -> anyhow::Result<Option<(Duration, String)>> {
            value
                .as_deref()
                .map(|v| retention_window(key, v).map(|d| (d, v.trim().to_owned())))
                .transpose()
        };
        Ok(Retention {
            ledger: setting("ledger.retention", &self.ledger.retention)?,
            graph: setting("graph.history_retention", &self.graph.history_retention)?,
        })
    }

    /// `sau.audit_bucket` (`file:///dir` or `s3://bucket/prefix`; absent or
    /// empty: no export) and `sau.audit_export_interval` (default `1h`).
    pub fn export_settings(&self) -> anyhow::Result<svc_api::export::ExportSettings> {
        let bucket = match self.sau.get("audit_bucket") {
            None => None,
            Some(toml::Value::String(s)) if s.trim().is_empty() => None,
            Some(toml::Value::String(s)) => Some(outside_data_dir(
                s.trim(),
                svc_api::export::Bucket::parse(s.trim()).map_err(anyhow::Error::msg)?,
            )?),
            Some(other) => bail!("sau.audit_bucket must be a string such as \"s3://bucket/prefix\", not {other}"),
        };
        let interval = match self.sau.get("audit_export_interval") {
            None => svc_api::export::DEFAULT_INTERVAL,
            Some(toml::Value::String(s)) => at_least_a_second("sau.audit_export_interval", s)?,
            Some(other) => bail!("sau.audit_export_interval must be a duration string such as \"1h\", not {other}"),
        };
        let max_events = match self.sau.get("audit_export_max_events") {
            None => svc_api::export::DEFAULT_MAX_EVENTS,
            Some(toml::Value::Integer(n)) if (1..=svc_api::export::MAX_EVENTS_LIMIT as i64).contains(n) => *n as usize,
            Some(other) => bail!(
                "sau.audit_export_max_events must be an integer from 1 to {}, not {other}",
                svc_api::export::MAX_EVENTS_LIMIT
            ),
        };
        Ok(svc_api::export::ExportSettings {
            bucket,
            interval,
            max_events,
        })
    }

    /// `[notify]`, checked: URLs are `http(s)://host/...`, secrets are
    /// not empty, names unique, kinds known, durations and numbers in range.
    pub fn notify_settings(&self) -> anyhow::Result<svc_api::notify::NotifySettings> {
        use svc_api::notify::settings::{self as ns, Kind, NotifySettings, Webhook};
        let n = &self.notify;
        let kinds = |key: &str, names: &[String]| -> anyhow::Result<std::collections::BTreeSet<Kind>> {
            names
                .iter()
                .map(|name| {
                    Kind::parse(name).ok_or_else(|| {
                        let known: Vec<&str> = Kind::SELECTABLE.iter().map(|k| k.name()).collect();
                        anyhow::anyhow!(
                            "{key} names {name:?}, which is not a kind; kinds are {}",
                            known.join(", ")
                        )
                    })
                })
                .collect()
        };
        let mut s = NotifySettings::default();
        if let Some(url) = n.slack_webhook.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
            ns::check_url("notify.slack_webhook", url).map_err(anyhow::Error::msg)?;
            s.slack_webhook = Some(url.to_owned());
        }
        if let Some(events) = &n.events {
            s.events = kinds("notify.events", events)?;
        }
        for (i, w) in n.webhooks.iter().enumerate() {
            let key = format!("notify.webhooks[{i}]");
            ns::check_url(&format!("{key}.url"), w.url.trim()).map_err(anyhow::Error::msg)?;
            if w.secret.is_empty() {
                bail!("{key}.secret is empty: the webhook's signature needs a secret");
            }
            let name = w.name.clone().unwrap_or_else(|| format!("webhook-{}", i + 1));
            if name.is_empty()
                || name.len() > 64
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                bail!("{key}.name {name:?} must be 1 to 64 letters, digits, '-', '_' or '.'");
            }
            if name == ns::SLACK || s.webhooks.iter().any(|o: &Webhook| o.name == name) {
                bail!("{key}.name {name:?} is taken: each destination needs a name of its own");
            }
            let events = match &w.events {
                Some(e) => Some(kinds(&format!("{key}.events"), e)?),
                None => None,
            };
            s.webhooks.push(Webhook {
                name,
                url: w.url.trim().to_owned(),
                secret: w.secret.clone(),
                events,
            });
        }
        if let Some(t) = n.waste_threshold_usd {
            if !t.is_finite() || t < 0.0 {
                bail!("notify.waste_threshold_usd must be a number of USD of at least 0, not {t}");
            }
            s.waste_threshold_usd = t;
        }
        let duration = |key: &str, v: &Option<String>, default: Duration, max: Duration| -> anyhow::Result<Duration> {
            let Some(text) = v else { return Ok(default) };
            let d = humantime::parse_duration(text).with_context(|| format!("{key} {text:?} is not a duration"))?;
            if d < Duration::from_millis(10) || d > max {
                bail!(
                    "{key} must be from 10ms to {}, got {text:?}",
                    humantime::format_duration(max)
                );
            }
            Ok(d)
        };
        s.timeout = duration(
            "notify.timeout",
            &n.timeout,
            ns::DEFAULT_TIMEOUT,
            Duration::from_secs(300),
        )?;
        s.backoff = duration(
            "notify.backoff",
            &n.backoff,
            ns::DEFAULT_BACKOFF,
            Duration::from_secs(3600),
        )?;
        s.backoff_max = duration(
            "notify.backoff_max",
            &n.backoff_max,
            ns::DEFAULT_BACKOFF_MAX.max(s.backoff),
            Duration::from_secs(3600),
        )?;
        if s.backoff_max < s.backoff {
            bail!("notify.backoff_max must be at least notify.backoff");
        }
        if let Some(a) = n.max_attempts {
            if !(1..=i64::from(ns::MAX_ATTEMPTS_LIMIT)).contains(&a) {
                bail!(
                    "notify.max_attempts must be from 1 to {}, not {a}",
                    ns::MAX_ATTEMPTS_LIMIT
                );
            }
            s.max_attempts = a as u32;
        }
        if let Some(url) = n.dashboard_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
            ns::check_url("notify.dashboard_url", url).map_err(anyhow::Error::msg)?;
            s.dashboard_url = Some(url.to_owned());
        }
        Ok(s)
    }

    /// `oracle.enabled`: whether formal verification runs (default `true`).
    /// The `oracle`, `sau`, `ai` and `iac` sections hold only the keys something
    /// reads, each of its type: a misspelt key is an error, not a setting
    /// silently ignored.
    fn known_keys(&self) -> anyhow::Result<()> {
        use toml::Value as V;
        /// A key, the test of its value, and what the test wants in words.
        type Key = (&'static str, fn(&V) -> bool, &'static str);
        let sections: [(&str, &toml::Table, &[Key]); 4] = [
            (
                "oracle",
                &self.oracle,
                &[
                    ("enabled", |v| matches!(v, V::Boolean(_)), "true or false"),
                    (
                        "trigger_threshold",
                        |v| matches!(v, V::Integer(_)) || matches!(v, V::Float(f) if f.is_finite()),
                        "a number",
                    ),
                ],
            ),
            (
                "sau",
                &self.sau,
                &[
                    ("audit_bucket", |v| matches!(v, V::String(_)), "a string"),
                    (
                        "audit_export_interval",
                        |v| matches!(v, V::String(_)),
                        "a duration string",
                    ),
                    ("audit_export_max_events", |v| matches!(v, V::Integer(_)), "an integer"),
                ],
            ),
            (
                "ai",
                &self.ai,
                &[
                    ("provider", |v| matches!(v, V::String(_)), "a string"),
                    ("model", |v| matches!(v, V::String(_)), "a string"),
                    ("router_model", |v| matches!(v, V::String(_)), "a string"),
                    ("api_key", |v| matches!(v, V::String(_)), "a string"),
                    ("api_key_env", |v| matches!(v, V::String(_)), "a string"),
                    ("base_url", |v| matches!(v, V::String(_)), "a string"),
                    ("timeout", |v| matches!(v, V::String(_)), "a duration string"),
                ],
            ),
            (
                "iac",
                &self.iac,
                &[
                    (
                        "terraform_states",
                        |v| matches!(v, V::Array(a) if a.iter().all(|s| matches!(s, V::String(t) if !t.trim().is_empty()))),
                        "a list of state file paths or s3://bucket/key URLs",
                    ),
                    (
                        "repository",
                        |v| matches!(v, V::String(_)),
                        "a path to a git repository",
                    ),
                ],
            ),
        ];
        for (section, table, keys) in sections {
            for (key, value) in table {
                let Some((_, ok, want)) = keys.iter().find(|(k, _, _)| k == key) else {
                    let known: Vec<&str> = keys.iter().map(|(k, _, _)| *k).collect();
                    bail!("unknown key {section}.{key}; {section} takes {}", known.join(", "));
                };
                if !ok(value) {
                    bail!("{section}.{key} must be {want}, not {value}");
                }
            }
        }
        Ok(())
    }

    pub fn oracle_enabled(&self) -> anyhow::Result<bool> {
        match self.oracle.get("enabled") {
            None => Ok(true),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(other) => bail!("oracle.enabled must be true or false, not {other}"),
        }
    }

    pub fn scan_timeout(&self) -> anyhow::Result<Duration> {
        at_least_a_second("daemon.scan_timeout", &self.daemon.scan_timeout)
    }

    /// `daemon.scan_timeout`, `daemon.scan_max_nodes` and
    /// `daemon.scan_max_edges`: what each source may take and send in a scan.
    pub fn scan_limits(&self) -> anyhow::Result<ScanLimits> {
        let positive = |key: &str, n: i64| match u64::try_from(n) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(anyhow::anyhow!("daemon.{key} must be a positive integer, not {n}")),
        };
        Ok(ScanLimits {
            timeout: Some(self.scan_timeout()?),
            max_nodes: positive("scan_max_nodes", self.daemon.scan_max_nodes)?,
            max_edges: positive("scan_max_edges", self.daemon.scan_max_edges)?,
        })
    }

    pub fn scan_interval(&self) -> anyhow::Result<Duration> {
        at_least_a_second("daemon.scan_interval", &self.daemon.scan_interval)
    }
}

/// A directory bucket may not be the data directory: its objects would
/// lie beside the token and the stores.
fn outside_data_dir(url: &str, bucket: svc_api::export::Bucket) -> anyhow::Result<svc_api::export::Bucket> {
    if let svc_api::export::Bucket::Dir(dir) = &bucket {
        let data = crate::paths::data_dir();
        let same =
            |a: &Path, b: &Path| a == b || a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a));
        if same(dir, &data) {
            bail!(
                "sau.audit_bucket {url:?} is the data directory, which holds the token and the stores; choose another directory"
            );
        }
    }
    Ok(bucket)
}

/// The longest duration a setting takes: a year. Past it an interval is
/// no schedule, and a timer set that far overflows the clock.
pub const MAX_SETTING_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A duration key (`5m`, `1h`) of at least one second and at most
/// [`MAX_SETTING_DURATION`].
fn at_least_a_second(key: &str, value: &str) -> anyhow::Result<Duration> {
    let d = humantime::parse_duration(value).with_context(|| format!("{key} {value:?} is not a duration"))?;
    if d < Duration::from_secs(1) {
        bail!("{key} must be at least 1s, got {value:?}");
    }
    if d > MAX_SETTING_DURATION {
        bail!("{key} must be at most 365d, got {value:?}");
    }
    Ok(d)
}

/// The shortest retention window: an hour. Less would drop the history
/// a scan interval or two ago, which no one keeps a ledger or time travel for.
pub const MIN_RETENTION: Duration = Duration::from_secs(3600);

/// The longest: a thousand years, which is keeping everything, and keeps
/// a window's start from underflowing the clock.
const MAX_RETENTION: Duration = Duration::from_secs(1000 * 365 * 24 * 3600);

/// A retention key (`400d`, `90d`, `12h`): a duration of at least
/// [`MIN_RETENTION`].
fn retention_window(key: &str, value: &str) -> anyhow::Result<Duration> {
    let d = humantime::parse_duration(value.trim())
        .with_context(|| format!("{key} {value:?} is not a duration such as \"400d\" or \"12h\""))?;
    if d < MIN_RETENTION {
        bail!("{key} must be at least 1h, got {value:?}; remove the key to keep everything");
    }
    if d > MAX_RETENTION {
        bail!("{key} must be at most 1000 years, got {value:?}; remove the key to keep everything");
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_section_is_checked() {
        assert_eq!(Config::validate_text("").unwrap().cluster_settings().unwrap(), None);
        let c = Config::validate_text(
            "[cluster]\nendpoints = [\"https://e1:2379\", \"https://e2:2379\"]\nnode_id = \"n1\"\n\
             advertise_url = \"https://n1:8443\"\nshared_store = \"s3://svc-cluster/prod\"\nca_file = \"/etc/svc/ca.pem\"\n\
             cert_file = \"/etc/svc/n1.pem\"\nkey_file = \"/etc/svc/n1.key\"",
        )
        .unwrap()
        .cluster_settings()
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoints.len(), 2);
        assert_eq!(
            (c.node_id.as_str(), c.lease_ttl, c.prefix.as_str()),
            ("n1", Duration::from_secs(10), "svc")
        );
        let tls = c.tls.unwrap();
        assert_eq!(tls.key.unwrap(), std::path::PathBuf::from("/etc/svc/n1.key"));
        assert_eq!(c.shared_store, "s3://svc-cluster/prod");
        let base = "[cluster]\nendpoints = [\"http://e1:2379\"]\nnode_id = \"n1\"\nadvertise_url = \"http://n1:8080\"\n\
                    shared_store = \"file:///srv/svc-shared\"\n";
        assert!(Config::validate_text(base).is_ok());
        for (extra, says) in [
            ("lease_ttl = \"1s\"", "lease_ttl"),
            ("lease_ttl = \"2500ms\"", "whole seconds"),
            ("lease_ttl = \"soon\"", "not a duration"),
            ("cert_file = \"/c.pem\"", "go together"),
            ("cert_file = \"/c.pem\"\nkey_file = \"/k.pem\"", "ca_file"),
            ("colour = \"blue\"", "colour"),
        ] {
            let e = Config::validate_text(&format!("{base}{extra}")).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{extra}: {e:#}");
        }
        let no_store = base.replace("shared_store = \"file:///srv/svc-shared\"\n", "");
        for (extra, says) in [
            ("", "shared_store"),
            ("shared_store = \"/srv/svc-shared\"", "file:///dir"),
            ("shared_store = \"file://relative\"", "file:///dir"),
        ] {
            let e = Config::validate_text(&format!("{no_store}{extra}")).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{extra}: {e:#}");
        }
        for (text, says) in [
            (
                "[cluster]\nnode_id = \"n1\"\nadvertise_url = \"http://n1\"",
                "endpoints is empty",
            ),
            (
                "[cluster]\nendpoints = [\"http://e1:2379\"]\nadvertise_url = \"http://n1\"",
                "node_id",
            ),
            (
                "[cluster]\nendpoints = [\"http://e1:2379\"]\nnode_id = \"n1\"\nadvertise_url = \"n1:80\"",
                "advertise_url",
            ),
        ] {
            let e = Config::validate_text(text).unwrap_err();
            assert!(format!("{e:#}").contains(says), "{text}: {e:#}");
        }
    }

    #[test]
    fn workers_section_names_sources_members_and_tls() {
        let text = r#"
[plugins]
active = ["aws"]
[workers]
tls_cert = "/etc/svc/daemon.pem"
tls_key = "/etc/svc/daemon.key"
tls_ca = "/etc/svc/ca.pem"
members = { w1 = "10.0.0.5:7443" }
[workers.sources.acct-a]
plugin = "mock"
worker = "w1"
config = { seed = 7, scale = "300" }
[workers.sources.acct-b]
plugin = "mock"
providers = ["aws", "gcp"]
"#;
        let s = Config::validate_text(text)
            .unwrap()
            .workers
            .check(&["aws".into()], false)
            .unwrap();
        assert_eq!(s.sources.len(), 2);
        assert_eq!(s.sources[0].0.providers, ["mock"]);
        assert_eq!(s.sources[0].1["seed"], "7");
        assert_eq!(s.sources[1].0.providers, ["aws", "gcp"]);
        assert_eq!(s.assignment.len(), 1, "acct-b has no static worker");
        assert_eq!(s.assignment["acct-a"].addr, "10.0.0.5:7443");
        assert!(s.tls.is_some());
        assert_eq!(
            Config::validate_text("").unwrap().workers.check(&[], false).unwrap(),
            WorkersSettings::default()
        );
        // In a cluster a pin may name a worker that registers in etcd.
        let clustered = format!(
            "{}\n[cluster]\nendpoints = [\"http://e1:2379\"]\nnode_id = \"n1\"\nadvertise_url = \"http://n1:8080\"\n\
             shared_store = \"file:///srv/svc-shared\"\n",
            text.replace("worker = \"w1\"", "worker = \"w9\"")
        );
        let c = Config::validate_text(&clustered).unwrap();
        let s = c.workers_settings().unwrap();
        assert_eq!(s.pins["acct-a"], "w9");
        assert!(s.assignment.is_empty(), "w9 has no static address");
        for (bad, why) in [
            (
                text.replace("worker = \"w1\"", "worker = \"w9\""),
                "not in workers.members",
            ),
            (text.replace("10.0.0.5:7443", "10.0.0.5"), "is not host:port"),
            (text.replace("tls_ca = \"/etc/svc/ca.pem\"", ""), "needed together"),
            (text.replace("acct-b", "aws"), "name of a local source"),
            (
                text.replace("plugin = \"mock\"\nworker", "plugin = \"../x\"\nworker"),
                "plugin \"../x\"",
            ),
            (text.replace("[\"aws\", \"gcp\"]", "[]"), "at least one provider"),
        ] {
            let e = format!("{:#}", Config::validate_text(&bad).unwrap_err());
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn heuristics_section_selects_built_in_rules() {
        let c: Config = toml::from_str("[heuristics]\nbuiltin = false").unwrap();
        assert!(!c.heuristics.selection().unwrap().enabled);
        let c = Config::validate_text("[heuristics]\ndisabled = [\"aws-ebs-gp2-to-gp3\"]").unwrap();
        let s = c.heuristics.selection().unwrap();
        assert!(s.enabled && s.disabled == ["aws-ebs-gp2-to-gp3"]);
        let e = Config::validate_text("[heuristics]\ndisabled = [\"no-such-rule\"]").unwrap_err();
        assert!(Config::validate_text("[oracle]\nenabled = 1").is_err());
        assert!(
            !Config::validate_text("[oracle]\nenabled = false")
                .unwrap()
                .oracle_enabled()
                .unwrap()
        );
        assert!(Config::validate_text("").unwrap().oracle_enabled().unwrap());
        assert!(format!("{e:#}").contains("not a built-in rule"), "{e:#}");
        assert!(Config::validate_text("").unwrap().heuristics.builtin);
    }

    #[test]
    fn registry_settings_have_defaults_and_refuse_bad_values() {
        let s = Config::validate_text("").unwrap().registry.settings().unwrap();
        assert_eq!(s.url, "");
        assert!(s.release_url.contains("{owner}/{name}/releases/download/{version}"));
        assert_eq!(
            (s.cache_ttl, s.timeout),
            (Duration::from_secs(3600), Duration::from_secs(60))
        );
        let s = Config::validate_text("[registry]\nurl = \"https://r.example/index.json\"\ncache_ttl = \"0s\"")
            .unwrap()
            .registry
            .settings()
            .unwrap();
        assert_eq!(
            (s.url.as_str(), s.cache_ttl),
            ("https://r.example/index.json", Duration::ZERO)
        );
        for (bad, want) in [
            ("[registry]\nurl = \"ftp://x/i.json\"", "registry.url"),
            ("[registry]\nrelease_url = \"https://h/{name}\"", "registry.release_url"),
            ("[registry]\ncache_ttl = \"often\"", "registry.cache_ttl"),
            ("[registry]\nmax_download_mb = 0", "registry.max_download_mb"),
            ("[registry]\nurll = \"x\"", "unknown field"),
        ] {
            let e = format!("{:#}", Config::validate_text(bad).unwrap_err());
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn export_settings_validate_bucket_and_interval() {
        let c = Config::validate_text("").unwrap();
        let s = c.export_settings().unwrap();
        assert_eq!((s.bucket, s.interval), (None, Duration::from_secs(3600)));
        let c =
            Config::validate_text("[sau]\naudit_bucket = \"s3://audit/svc\"\naudit_export_interval = \"5m\"").unwrap();
        let s = c.export_settings().unwrap();
        assert_eq!(s.bucket.map(|b| b.to_string()).as_deref(), Some("s3://audit/svc"));
        assert_eq!(s.interval, Duration::from_secs(300));
        for bad in [
            "[sau]\naudit_bucket = \"ftp://x\"",
            "[sau]\naudit_bucket = 3",
            "[sau]\naudit_export_interval = \"soon\"",
            "[sau]\naudit_export_interval = \"10ms\"",
            "[sau]\naudit_export_max_events = 0",
        ] {
            let e = Config::validate_text(bad).unwrap_err();
            assert!(format!("{e:#}").contains("sau.audit_"), "{bad}: {e:#}");
        }
    }

    #[test]
    fn notify_section_is_checked() {
        let c = Config::validate_text("").unwrap();
        let s = c.notify_settings().unwrap();
        assert!(!s.any_destination());
        assert_eq!(s.events.len(), 6, "every kind by default");
        let c = Config::validate_text(
            r#"[notify]
slack_webhook = "https://hooks.slack.com/services/T0/B0/x"
events = ["waste", "ledger_chain"]
waste_threshold_usd = 250.5
timeout = "3s"
max_attempts = 3
backoff = "500ms"
backoff_max = "10s"

[[notify.webhooks]]
url = "https://ops.example.com/svc"
secret = "k"

[[notify.webhooks]]
name = "pager"
url = "http://127.0.0.1:9000/hook"
secret = "k2"
events = ["plugin"]
"#,
        )
        .unwrap();
        let s = c.notify_settings().unwrap();
        assert_eq!(s.waste_threshold_usd, 250.5);
        assert_eq!((s.timeout, s.max_attempts), (Duration::from_secs(3), 3));
        assert_eq!(
            (s.backoff, s.backoff_max),
            (Duration::from_millis(500), Duration::from_secs(10))
        );
        let names: Vec<&str> = s.webhooks.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["webhook-1", "pager"]);
        let to = |k| {
            s.destinations_for(k)
                .iter()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(to(svc_api::notify::Kind::Waste), ["slack", "webhook-1"]);
        assert_eq!(to(svc_api::notify::Kind::Plugin), ["pager"]);
        for (bad, want) in [
            (
                "[notify]\nslack_webhook = \"hooks.slack.com/x\"",
                "notify.slack_webhook",
            ),
            (
                "[notify]\nslack_webhook = \"ftp://a/b\"",
                "must be an http:// or https:// URL",
            ),
            ("[notify]\nevents = [\"wastes\"]", "notify.events names \"wastes\""),
            ("[notify]\nwaste_threshold_usd = -1.0", "notify.waste_threshold_usd"),
            ("[notify]\ntimeout = \"1ms\"", "notify.timeout must be from 10ms"),
            ("[notify]\nmax_attempts = 0", "notify.max_attempts must be from 1 to 20"),
            (
                "[notify]\nbackoff = \"10s\"\nbackoff_max = \"1s\"",
                "notify.backoff_max must be at least",
            ),
            (
                "[notify]\nslak_webhook = \"https://a/b\"",
                "unknown field `slak_webhook`",
            ),
            (
                "[[notify.webhooks]]\nurl = \"https://a/b\"\nsecret = \"\"",
                "notify.webhooks[0].secret is empty",
            ),
            ("[[notify.webhooks]]\nurl = \"https://a/b\"", "missing field `secret`"),
            (
                "[[notify.webhooks]]\nname = \"slack\"\nurl = \"https://a/b\"\nsecret = \"k\"",
                "is taken",
            ),
            (
                "[[notify.webhooks]]\nurl = \"https://a/b\"\nsecret = \"k\"\nevents = [\"test\"]",
                "notify.webhooks[0].events names \"test\"",
            ),
        ] {
            let e = format!("{:#}", Config::validate_text(bad).unwrap_err());
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn retention_windows_are_an_hour_or_more_and_absent_keeps_everything() {
        let c = Config::validate_text("").unwrap();
        assert_eq!(c.retention().unwrap(), Retention::default());
        let c = Config::validate_text("[ledger]\nretention = \"400d\"\n[graph]\nhistory_retention = \"1h\"").unwrap();
        let r = c.retention().unwrap();
        assert_eq!(r.ledger, Some((Duration::from_secs(400 * 86_400), "400d".to_owned())));
        assert_eq!(r.graph, Some((Duration::from_secs(3600), "1h".to_owned())));
        for (text, want) in [
            ("[ledger]\nretention = \"30m\"", "ledger.retention must be at least 1h"),
            (
                "[graph]\nhistory_retention = \"soon\"",
                "graph.history_retention \"soon\" is not a duration",
            ),
            (
                "[graph]\nhistory_retention = \"5000y\"",
                "graph.history_retention must be at most 1000 years",
            ),
        ] {
            let e = format!("{:#}", Config::validate_text(text).unwrap_err());
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(Config::validate_text("[ledger]\nretention = 400").is_err());
        let e = Config::validate_text("[graph]\nretention = \"400d\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("history_retention"), "{e}");
    }

    #[test]
    fn defaults_and_parsing() {
        let c: Config = toml::from_str("").unwrap();
        assert_eq!(c.scan_interval().unwrap(), Duration::from_secs(300));
        let c: Config = toml::from_str("[daemon]\nscan_interval = \"30s\"\n[plugins]\nactive = [\"aws\"]").unwrap();
        assert_eq!(c.scan_interval().unwrap(), Duration::from_secs(30));
        assert_eq!(c.plugins.active, vec!["aws"]);
        let c: Config = toml::from_str("[plugins.config.aws]\nregion = \"eu-west-1\"\nmax = 3").unwrap();
        let cfg = c.plugins.scan_config("aws");
        assert_eq!(cfg.get("region").map(String::as_str), Some("eu-west-1"));
        assert_eq!(cfg.get("max").map(String::as_str), Some("3"));
        assert!(c.plugins.scan_config("gcp").is_empty());
        // Lists as TOML text; nested tables as dotted keys, however written.
        for text in [
            "[plugins.config.aws]\nregions = [\"us-east-1\", \"eu-west-1\"]\nendpoint_url.eu-west-1 = \"http://e:1\"",
            "[plugins.config.aws]\nregions = [\"us-east-1\", \"eu-west-1\"]\n\"endpoint_url.eu-west-1\" = \"http://e:1\"",
            "[plugins.config.aws]\nregions = [\"us-east-1\", \"eu-west-1\"]\n[plugins.config.aws.endpoint_url]\neu-west-1 = \"http://e:1\"",
        ] {
            let c: Config = toml::from_str(text).unwrap();
            let cfg = c.plugins.scan_config("aws");
            assert_eq!(
                cfg.into_iter().collect::<Vec<_>>(),
                vec![
                    ("endpoint_url.eu-west-1".to_owned(), "http://e:1".to_owned()),
                    ("regions".to_owned(), r#"["us-east-1", "eu-west-1"]"#.to_owned())
                ],
                "{text}"
            );
        }
        assert!(toml::from_str::<Config>("[daemon]\nbogus = 1").is_err());
        let c: Config = toml::from_str("[daemon]\nscan_interval = \"soon\"").unwrap();
        assert!(c.scan_interval().is_err());
        // A timer that far ahead would overflow the clock and stop the scheduler.
        for key in ["scan_interval", "scan_timeout"] {
            let e = Config::validate_text(&format!("[daemon]\n{key} = \"500000000y\"")).unwrap_err();
            assert!(e.to_string().contains("at most 365d"), "{e}");
            assert!(Config::validate_text(&format!("[daemon]\n{key} = \"365d\"")).is_ok());
        }
        for (text, want) in [
            (
                "[oracle]\nenabeld = true",
                "unknown key oracle.enabeld; oracle takes enabled, trigger_threshold",
            ),
            ("[sau]\nbucket = \"s3://a\"", "unknown key sau.bucket"),
            ("[ai]\nmodel = 3", "ai.model must be a string, not 3"),
            (
                "[iac]\nterraform_states = \"prod.tfstate\"",
                "iac.terraform_states must be a list of state file paths",
            ),
            (
                "[iac]\nterraform_states = [\"\"]",
                "iac.terraform_states must be a list",
            ),
            (
                "[iac]\nrepo = \"/srv/infra\"",
                "unknown key iac.repo; iac takes terraform_states, repository",
            ),
            (
                "[oracle]\ntrigger_threshold = \"high\"",
                "oracle.trigger_threshold must be a number",
            ),
        ] {
            let e = Config::validate_text(text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text}: {e}");
        }
        assert!(Config::validate_text("[oracle]\ntrigger_threshold = 0.5\n[ai]\nprovider = \"anthropic\"").is_ok());
        assert!(
            Config::validate_text(
                "[iac]\nterraform_states = [\"prod.tfstate\", \"s3://tf/app.tfstate\"]\nrepository = \"/srv/infra\""
            )
            .is_ok()
        );
        let e = Config::validate_text("[sau]\naudit_export_interval = \"400d\"").unwrap_err();
        assert!(e.to_string().contains("at most 365d"), "{e}");
    }
}

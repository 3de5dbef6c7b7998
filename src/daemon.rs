//! `svc daemon`: wires the engine, the sources and the HTTP server together.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use svc_api::AppState;
use svc_engine::Engine;
use svc_engine::clock::SystemClock;
use svc_engine::scan::{Deferred, Source};
use svc_engine::store::atomic::write_bytes_atomic;
use svc_mock_estate::{MockEstate, SOURCE_NAME as MOCK_SOURCE};
use tracing::{error, info, warn};

use crate::config::Config;
use crate::paths;
use crate::plugins::{PluginState, Plugins};
use crate::settings::FileConfig;

/// How long a stopping daemon waits for a running scan to let go of the
/// plugins before it exits without shutting them down one by one.
const PLUGIN_STOP_WAIT: Duration = Duration::from_secs(5);

pub struct DaemonOptions {
    pub listen: SocketAddr,
    pub mock: bool,
    pub mock_scale: usize,
    pub mock_seed: u64,
}

pub async fn run(opts: DaemonOptions) -> anyhow::Result<Exit> {
    let data_dir = paths::data_dir();
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
    private_dir(&data_dir)?;
    let config = Config::load(&data_dir.join(paths::CONFIG_FILE))?;
    let interval = config.scan_interval()?;
    let token = ensure_token(&data_dir.join(paths::TOKEN_FILE))?;
    let tokens = svc_api::auth::tokens::TokenStore::open(&data_dir.join(paths::TOKENS_FILE), &token)?;
    let session_id = new_session_id();

    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("cannot listen on {}", opts.listen))?;
    let local = listener.local_addr()?;
    let state = AppState::with_tokens(tokens);
    state.set_simulated_sources(vec![MOCK_SOURCE.to_owned()]);
    let server = tokio::spawn(svc_api::serve(listener, state.clone(), shutdown_signal()));
    info!(
        addr = %local,
        data_dir = %data_dir.display(),
        token_file = %data_dir.join(paths::TOKEN_FILE).display(),
        session_id = %session_id,
        "svc listening on http://{local}"
    );
    // The token travels in the fragment, which a browser never sends: the
    // dashboard exchanges it for a session cookie.
    info!("dashboard: http://{local}/#token={token}");

    // In a cluster, a standby opens no engine: it follows the leader's
    // stores until it is elected, then opens the engine on them.
    let cluster = config.cluster_settings()?;
    let mut server = server;
    let elected = match &cluster {
        Some(settings) => tokio::select! {
            elected = crate::cluster::standby(settings, &state, &data_dir, &session_id) => Some(elected?),
            result = &mut server => {
                result.context("server task failed")?.context("server failed")?;
                info!("svc stopped");
                return Ok(Exit::Stopped);
            }
        },
        None => None,
    };
    let dir = data_dir.clone();
    let sid = session_id.clone();
    let replication = elected.as_ref().map(|e| e.replication()).unwrap_or_default();
    let (engine, items) = tokio::task::spawn_blocking(move || {
        Engine::open_deferred(&dir, &sid, Arc::new(SystemClock::default()), replication)
    })
    .await
    .context("engine start was cancelled")?
    .context("cannot open the stores")?;
    let engine = Arc::new(engine);
    let plugins = Arc::new(Plugins::discover(
        &data_dir.join(paths::PLUGINS_DIR),
        data_dir.join(paths::CONFIG_FILE),
        &config.plugins.active,
        engine.clone(),
        tokio::runtime::Handle::current(),
    ));
    // Before the local sources: a source a worker runs is a provider asked
    // for, so no simulated estate stands in beside it.
    let workers = Arc::new(crate::workers::Workers::new(
        engine.clone(),
        plugins.clone(),
        tokio::runtime::Handle::current(),
    ));
    workers.configure(config.workers_settings()?)?;
    setup_sources(&opts, &config, &engine, &plugins, &data_dir);
    // A plugin installed while the daemon runs is scanned from the next
    // scan; the hook holds the catalog weakly, as the catalog holds the engine.
    let catalog = Arc::downgrade(&plugins);
    engine.set_before_scan(Arc::new(move || {
        if let Some(plugins) = catalog.upgrade() {
            plugins.rediscover();
        }
    }));
    engine.set_scan_limits(config.scan_limits()?);
    engine.set_rule_selection(config.heuristics.selection()?);
    engine.set_oracle_enabled(config.oracle_enabled()?);
    let retention = config.retention()?;
    engine.set_history_retention(retention.graph.as_ref().map(|(d, _)| *d));
    engine.set_pack_source(Arc::new(svc_ingest::packs::PackDir::new(
        data_dir.join(paths::POLICIES_DIR),
    )));
    state.set_plugins(plugins.clone());
    let registry = Arc::new(crate::registry::Registry::new(
        config.registry.settings()?,
        &data_dir,
        plugins.clone(),
        engine.clone(),
    ));
    state.set_registry(registry.clone());

    let exporter = Arc::new(svc_api::export::Exporter::new(
        engine.clone(),
        config.export_settings()?,
        svc_api::export::Identity::new(ensure_daemon_uuid(&data_dir.join(paths::DAEMON_UUID_FILE))?),
    ));
    state.set_exporter(exporter.clone());
    let notifier = svc_api::notify::Notifier::new(config.notify_settings()?, state.inner.metrics.notify.clone())
        .map_err(anyhow::Error::msg)?;
    notifier.attach(&engine);
    state.set_notifier(notifier.clone());
    // Alone, this node always leads; in a cluster, only while elected.
    let (leading, mut node) = match elected {
        Some(elected) => crate::cluster::lead(elected, engine.clone()),
        None => crate::cluster::alone(),
    };
    // In a cluster, the live workers registered in etcd run the `[workers]`
    // sources; alone, the static `[workers.members]` do.
    let _assigning = match &cluster {
        Some(settings) => Some(workers.follow(crate::cluster::live_workers(settings)?)),
        None => None,
    };
    let (interval_tx, interval_rx) = tokio::sync::watch::channel(interval);
    let (retention_tx, retention_rx) = tokio::sync::watch::channel(retention);
    state.set_config(Arc::new(FileConfig::new(
        data_dir.join(paths::CONFIG_FILE),
        live_apply(
            engine.clone(),
            plugins.clone(),
            workers,
            registry,
            exporter.clone(),
            notifier.clone(),
            interval_tx,
            retention_tx,
        ),
    )));
    // Ready last: every route has what it serves from once `/readyz` says
    // so. The remediation items are read after: what needs them (the
    // queue's routes, a scan's `engine.sau`) waits for them, and items
    // that cannot be read stop the daemon as a corrupt store does.
    state.set_engine(engine.clone());
    info!(nodes = engine.graph().node_rows(), "graph hydrated; ready");
    let mut items = {
        let engine = engine.clone();
        tokio::task::spawn_blocking(move || items.load(&engine))
    };

    // What scans or appends to the ledger runs on the leader only.
    let scheduler = tokio::spawn(supervise(SCHEDULER, state.clone(), {
        let (engine, state, leading) = (engine.clone(), state.clone(), leading.clone());
        move || {
            let (engine, state, interval_rx) = (engine.clone(), state.clone(), interval_rx.clone());
            crate::cluster::while_leading(leading.clone(), move || {
                schedule_scans(engine.clone(), state.clone(), interval_rx.clone())
            })
        }
    }));
    let storage = tokio::spawn(supervise("storage", state.clone(), {
        let engine = engine.clone();
        move || watch_storage(engine.clone())
    }));
    let retention = tokio::spawn(supervise(crate::retention::PART, state.clone(), {
        let (engine, exporter, state, leading) = (engine.clone(), exporter.clone(), state.clone(), leading.clone());
        move || {
            let (engine, exporter, state, retention_rx) =
                (engine.clone(), exporter.clone(), state.clone(), retention_rx.clone());
            crate::cluster::while_leading(leading.clone(), move || {
                crate::retention::enforce(engine.clone(), exporter.clone(), state.clone(), retention_rx.clone())
            })
        }
    }));
    let export_schedule = tokio::spawn(crate::cluster::while_leading(leading.clone(), {
        let state = state.clone();
        move || svc_api::export::schedule(state.clone(), exporter.clone())
    }));
    let notifications = tokio::spawn(supervise(NOTIFIER, state.clone(), {
        let state = state.clone();
        move || {
            let state = state.clone();
            notifier.clone().run(move || state.clear_fault(NOTIFIER))
        }
    }));
    let expiry = tokio::spawn(crate::cluster::while_leading(leading, {
        let engine = engine.clone();
        move || expire_isolations(engine.clone())
    }));
    let unreadable = async {
        match (&mut items).await {
            Ok(Ok(())) => std::future::pending().await,
            Ok(Err(e)) => anyhow::Error::new(e).context("cannot read the remediation items"),
            Err(e) => anyhow::Error::new(e).context("the remediation items' load stopped"),
        }
    };
    let (result, exit) = tokio::select! {
        result = &mut server => (result.context("server task failed")?.context("server failed"), Exit::Stopped),
        () = node.demoted() => {
            server.abort();
            (Ok(()), Exit::Restart)
        }
        e = unreadable => {
            error!(error = %format!("{e:#}"), "the daemon stops");
            server.abort();
            (Err(e), Exit::Stopped)
        }
    };
    scheduler.abort();
    storage.abort();
    retention.abort();
    export_schedule.abort();
    notifications.abort();
    expiry.abort();
    let stopping = engine.clone();
    let stopped = tokio::task::spawn_blocking(move || stopping.stop_plugins(PLUGIN_STOP_WAIT)).await;
    if !matches!(stopped, Ok(true)) {
        warn!("a scan still holds the plugins; they are killed as the daemon exits");
    }
    // The last commit's snapshot makes the next start fast.
    let flushing = engine.clone();
    let _ = tokio::task::spawn_blocking(move || flushing.wait_snapshot()).await;
    result?;
    match exit {
        Exit::Stopped => info!("svc stopped"),
        Exit::Restart => info!("svc stopped; starting again as a cluster standby"),
    }
    Ok(exit)
}

/// How [`run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Asked to stop (a signal).
    Stopped,
    /// Another node leads the cluster: this process must start again, as
    /// a standby following it.
    Restart,
}

/// Sets up the sources: the active provider plugins, plus the mock estate
/// when asked for (`--mock`), or, when no cloud credentials are found,
/// until a provider plugin is active ([`Plugins::apply`]). A plugin
/// listed in `plugins.active` that fails its integrity check, or is not
/// installed, counts as active: the simulated estate never stands in for a
/// provider the operator asked for (it would retire that provider's
/// resources), and the plugin's scans fail with the reason instead. Nor
/// does it stand in for plugins turned off in a graph that holds what a
/// plugin other than the mock one reported.
///
/// Credentials found for a cloud whose plugin is not installed, or not
/// active, are reported with what to run and what to write to scan it.
fn setup_sources(
    opts: &DaemonOptions,
    config: &Config,
    engine: &Engine,
    plugins: &Plugins,
    data_dir: &std::path::Path,
) {
    let (seed, scale) = (opts.mock_seed, opts.mock_scale);
    // What remediation does to the simulated estate outlives a restart.
    let effects = data_dir.join(paths::MOCK_EFFECTS_FILE);
    // Planned at its first scan, not before the daemon is ready.
    let mock = move || -> Box<dyn Source> {
        let effects = effects.clone();
        let providers = svc_mock_estate::PROVIDERS.iter().map(|p| (*p).to_owned()).collect();
        Box::new(Deferred::new(MOCK_SOURCE, providers, move || {
            MockEstate::new(seed, scale).with_effects_file(&effects)
        }))
    };
    plugins.configure(&config.plugins);
    if opts.mock {
        info!(scale, seed, "mock mode: scanning a simulated estate (--mock)");
        plugins.keep_source(Box::new(mock));
    } else {
        let credentials = found_credentials();
        if !credentials.is_empty() {
            let found: Vec<String> = credentials.iter().map(Found::to_string).collect();
            info!(credentials = ?found, "cloud credentials found");
        }
        for cloud in &credentials {
            match activation_hint(cloud, plugins.state(cloud.provider)) {
                Some(hint) => warn!(provider = cloud.provider, "{hint}"),
                None => info!(
                    provider = cloud.provider,
                    "{p} credentials found and the {p} plugin is active: {p} is scanned through it",
                    p = cloud.provider
                ),
            }
        }
        // A graph that holds what a real plugin reported is not mixed with,
        // nor retired by, a simulated estate of the same providers.
        // Which sources filled it is unknown when their record cannot be
        // read: then a graph with any rows is taken for a real one.
        let real: Option<Vec<String>> = engine
            .sources_seen()
            .map(|seen| seen.into_iter().filter(|name| name != MOCK_SOURCE).collect());
        let held = match &real {
            Some(real) => !real.is_empty(),
            None => engine.graph().node_rows() > 0,
        };
        if credentials.is_empty() && held && !plugins.provider_asked() {
            let sources = real.map_or_else(|| "unknown (their record cannot be read)".to_owned(), |r| r.join(", "));
            warn!(%sources, "no cloud credentials and no active plugins, but this graph holds what real \
                sources reported: not falling back to a simulated estate; scans find nothing until a plugin is active");
        } else if credentials.is_empty() {
            plugins.set_fallback(Box::new(mock));
        } else if !plugins.provider_asked() {
            warn!(
                "cloud credentials found but no provider plugin is active: scans find nothing, and no \
                   simulated estate stands in for a real account"
            );
        }
    }
    plugins.apply();
}

/// Standard credentials of one cloud, and where they were found.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Found {
    /// The provider (and plugin) name: `aws`, `gcp`, `azure`, `kubernetes`.
    provider: &'static str,
    /// The variables or files that hold them.
    from: Vec<String>,
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.provider, self.from.join(", "))
    }
}

/// Standard credential sources that are present, per cloud. Only their
/// presence is checked, never their validity: the provider plugin's
/// preflight check does that before each scan.
fn found_credentials() -> Vec<Found> {
    let env = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |rel: &str| home.as_ref().is_some_and(|h| h.join(rel).is_file());
    // A variable naming a file, else a file under the home directory (as
    // the SDKs read it: a variable naming no file means none).
    let file_at = |var: &str, rel: &str| -> Option<String> {
        match std::env::var_os(var).filter(|v| !v.is_empty()) {
            Some(p) => Path::new(&p)
                .is_file()
                .then(|| format!("{var}={}", Path::new(&p).display())),
            None => file(rel).then(|| format!("~/{rel}")),
        }
    };
    let mut found = Vec::new();
    let mut push = |provider: &'static str, from: Vec<String>| {
        if !from.is_empty() {
            found.push(Found { provider, from });
        }
    };
    let mut aws: Vec<String> = [
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .into_iter()
    .filter(|k| env(k))
    .map(str::to_owned)
    .collect();
    aws.extend(file_at("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
    aws.extend(file_at("AWS_CONFIG_FILE", ".aws/config"));
    push("aws", aws);
    let mut gcp: Vec<String> = ["GOOGLE_APPLICATION_CREDENTIALS"]
        .into_iter()
        .filter(|k| env(k))
        .map(str::to_owned)
        .collect();
    gcp.extend(file(".config/gcloud/application_default_credentials.json").then(|| "gcloud ADC".to_owned()));
    push("gcp", gcp);
    let mut azure: Vec<String> = ["AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"]
        .into_iter()
        .filter(|k| env(k))
        .map(str::to_owned)
        .collect();
    azure.extend(file(".azure/azureProfile.json").then(|| "~/.azure/azureProfile.json".to_owned()));
    push("azure", azure);
    let mut kube: Vec<String> = ["KUBECONFIG"]
        .into_iter()
        .filter(|k| env(k))
        .map(str::to_owned)
        .collect();
    kube.extend(file(".kube/config").then(|| "~/.kube/config".to_owned()));
    push("kubernetes", kube);
    found
}

/// What an operator with `cloud`'s credentials does to have that cloud
/// scanned, when its plugin is not installed or not active; `None` when
/// it is active.
fn activation_hint(cloud: &Found, state: PluginState) -> Option<String> {
    let p = cloud.provider;
    let found = format!("{p} credentials found ({})", cloud.from.join(", "));
    let activate = format!(
        "turn it on with `svc plugins toggle {p}`, or in config.toml: `[plugins]` `active = [\"{p}\"]` \
         (with any other plugin already listed there)"
    );
    let settings = match p {
        "aws" => {
            ", and choose regions under `[plugins.config.aws]`: `regions = [\"us-east-1\", \"eu-west-1\"]` \
                  (without it, every enabled region of the account)"
        }
        _ => "",
    };
    let install = match p {
        "aws" => "build and install it: `cargo build --release -p svc-plugin-aws` then \
                  `svc plugins install-local target/release/svc-plugin-aws`"
            .to_owned(),
        _ => format!("install a provider plugin for it: `svc plugins install-local PATH/svc-plugin-{p}`"),
    };
    match state {
        PluginState::Active => None,
        PluginState::Inactive => Some(format!(
            "{found}, but the {p} plugin is installed and not active: {p} is not scanned; \
             {activate}{settings}; a running daemon picks it up at its next scan"
        )),
        PluginState::NotInstalled => Some(format!(
            "{found}, but no {p} plugin is installed (svc-plugin-{p} in the plugin directory): \
             {p} is not scanned; {install}, then {activate}{settings}; a running daemon picks it up at its next scan"
        )),
    }
}

/// What `PUT /api/v1/config` changes without a restart: the scan
/// interval, the built-in rule selection, formal verification, the
/// compliance export, the registry settings, the retention windows
/// (applied at once), notifications (`[notify]`, from the next
/// notification sent), and from the next scan `plugins.active`, each
/// plugin's scan settings, the scan timeout and limits, and `[workers]`
/// (the sources scan workers run, and which worker runs each).
#[allow(clippy::too_many_arguments)]
fn live_apply(
    engine: Arc<Engine>,
    plugins: Arc<Plugins>,
    workers: Arc<crate::workers::Workers>,
    registry: Arc<crate::registry::Registry>,
    exporter: Arc<svc_api::export::Exporter>,
    notifier: Arc<svc_api::notify::Notifier>,
    interval: tokio::sync::watch::Sender<Duration>,
    retention: tokio::sync::watch::Sender<crate::config::Retention>,
) -> crate::settings::Apply {
    Box::new(move |c: &Config| {
        plugins.configure(&c.plugins);
        if let Ok(s) = c.workers_settings() {
            workers.reconfigure(s);
        }
        if let Ok(s) = c.registry.settings() {
            registry.configure(s);
        }
        // Every value was validated before this is called.
        if let Ok(d) = c.scan_interval() {
            interval.send_if_modified(|cur| std::mem::replace(cur, d) != d);
        }
        if let Ok(limits) = c.scan_limits() {
            engine.set_scan_limits(limits);
        }
        if let Ok(sel) = c.heuristics.selection() {
            engine.set_rule_selection(sel);
        }
        if let Ok(on) = c.oracle_enabled() {
            engine.set_oracle_enabled(on);
        }
        if let Ok(s) = c.export_settings() {
            exporter.set_settings(s);
        }
        if let Ok(s) = c.notify_settings() {
            notifier.set_settings(s);
        }
        if let Ok(r) = c.retention() {
            engine.set_history_retention(r.graph.as_ref().map(|(d, _)| *d));
            retention.send_if_modified(|cur| std::mem::replace(cur, r.clone()) != r);
        }
    })
}

/// The scan scheduler's name where the daemon reports it stuck (`/readyz`).
const SCHEDULER: &str = "scheduler";
/// The notifier's delivery task's name there.
const NOTIFIER: &str = "notifier";

/// Keeps a task of the daemon running: when it stops (a panic), `part` is
/// reported not ready with why, and the task is started again after a
/// pause (1 s, doubling up to a minute while it keeps stopping). The task
/// clears the fault itself once it makes progress ([`AppState::clear_fault`]).
async fn supervise<F, Fut>(part: &'static str, state: AppState, task: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    use futures::FutureExt;
    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(60);
    let mut pause = FIRST;
    loop {
        let started = std::time::Instant::now();
        let outcome = std::panic::AssertUnwindSafe(task()).catch_unwind().await;
        let why = match outcome {
            Ok(()) => "stopped".to_owned(),
            Err(panic) => format!("stopped: {}", panic_text(panic.as_ref())),
        };
        if started.elapsed() > MAX {
            pause = FIRST;
        }
        error!(part, reason = %why, pause = ?pause, "a daemon task stopped; it is started again");
        state.set_fault(part, format!("{why}; starting again"));
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX);
    }
}

/// How often a failed store is tried again.
const STORAGE_CHECK: Duration = Duration::from_secs(1);

/// Watches the stores. First it walks the ledger's chain: a break found
/// stops appends, and `/readyz`, `svc_ready` and the log say so. Then,
/// every [`STORAGE_CHECK`] while a store has failed (a full disk, an I/O
/// error) or a committed scan is not in the ledger yet, it tries to bring
/// them back ([`Engine::recover_storage`]): a disk that was full works
/// again, without a restart, once space is freed.
async fn watch_storage(engine: Arc<Engine>) {
    let verifying = engine.clone();
    match tokio::task::spawn_blocking(move || verifying.ledger().verify()).await {
        Ok(Ok(report)) if report.ok => info!(events = report.checked, "ledger chain verified"),
        // Logged, and reported by readiness, by the ledger itself.
        Ok(Ok(_)) => {}
        Ok(Err(e)) => warn!(error = %e, "cannot verify the ledger's chain"),
        Err(e) => warn!(error = %e, "ledger verification did not finish"),
    }
    let mut tick = tokio::time::interval(STORAGE_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if !engine.needs_recovery() {
            continue;
        }
        let recovering = engine.clone();
        if let Ok(faults) = tokio::task::spawn_blocking(move || recovering.recover_storage()).await
            && faults.is_empty()
        {
            info!("stores writable again");
        }
    }
}

/// A panic's message, when it has one.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panicked")
}

/// A scan at start, then one every interval (re-read when the
/// configuration changes); a tick that finds a scan running (one triggered
/// through the API) is skipped. Each tick clears a fault the scheduler was
/// reported stuck with ([`supervise`]).
async fn schedule_scans(engine: Arc<Engine>, state: AppState, mut interval: tokio::sync::watch::Receiver<Duration>) {
    let mut ticker = tokio::time::interval(*interval.borrow_and_update());
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => state.clear_fault(SCHEDULER),
            changed = interval.changed() => {
                if changed.is_ok() {
                    let d = *interval.borrow_and_update();
                    ticker = tokio::time::interval_at(tokio::time::Instant::now() + d, d);
                    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                }
                continue;
            }
        }
        let Some(permit) = engine.try_start_scan() else {
            info!("scheduled scan skipped: a scan is already running");
            continue;
        };
        match tokio::task::spawn_blocking(move || permit.run()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                state.inner.metrics.observe_scan_failure();
                error!(error = %e, "scheduled scan failed");
            }
            Err(e) => {
                state.inner.metrics.observe_scan_failure();
                error!(error = %e, "scheduled scan panicked");
            }
        }
    }
}

/// Ignore entries expire by themselves, between scans too: checked every
/// second, each expiry recorded in the ledger.
async fn expire_isolations(engine: Arc<Engine>) {
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        ticker.tick().await;
        let e = engine.clone();
        let now = e.clock().now_us();
        match tokio::task::spawn_blocking(move || e.expire_isolations(now)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => info!(expired = n, "ignore entries expired"),
            Ok(Err(e)) => error!(error = %e, "cannot expire ignore entries"),
            Err(e) => error!(error = %e, "ignore-entry expiry panicked"),
        }
    }
}

/// Makes the data directory readable by its owner only (mode 0700): it
/// holds the token, the configuration with its credentials, the ledger
/// and the graph, whatever mode the stores give their files.
fn private_dir(dir: &Path) -> anyhow::Result<()> {
    let mode = std::fs::metadata(dir)
        .with_context(|| format!("cannot read data directory {}", dir.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make data directory {} private (mode 0700)", dir.display()))?;
        info!(data_dir = %dir.display(), was = format!("{:o}", mode & 0o777), "data directory made private (mode 0700)");
    }
    Ok(())
}

/// Reads the admin token (the token named `admin`), writing a new one (mode 0600, one line) on first start.
pub fn ensure_token(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => bail!(
            "token file {} is empty; delete it to have a new token written",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read token file {}", path.display())),
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("cannot draw random bytes: {e}"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create token file {}", path.display()))?;
    writeln!(f, "{token}").with_context(|| format!("cannot write token file {}", path.display()))?;
    f.sync_all()?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(token)
}

/// The daemon's identity in compliance exports: a random UUID written to
/// the data directory on first start and kept.
fn ensure_daemon_uuid(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("cannot draw random bytes: {e}"))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let uuid = format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]);
    write_bytes_atomic(path, format!("{uuid}\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(uuid)
}

fn new_session_id() -> String {
    let mut bytes = [0u8; 6];
    let _ = getrandom::fill(&mut bytes);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("s-{secs}-{hex}")
}

pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_without_their_plugin_say_how_to_install_and_activate_it() {
        let aws = Found {
            provider: "aws",
            from: vec!["AWS_PROFILE".into(), "~/.aws/config".into()],
        };
        assert_eq!(activation_hint(&aws, PluginState::Active), None);
        let missing = activation_hint(&aws, PluginState::NotInstalled).unwrap();
        for part in [
            "aws credentials found (AWS_PROFILE, ~/.aws/config), but no aws plugin is installed",
            "`cargo build --release -p svc-plugin-aws`",
            "`svc plugins install-local target/release/svc-plugin-aws`",
            "`[plugins]` `active = [\"aws\"]`",
            "`svc plugins toggle aws`",
            "`regions = [\"us-east-1\", \"eu-west-1\"]`",
        ] {
            assert!(missing.contains(part), "{part:?} not in {missing}");
        }
        let inactive = activation_hint(&aws, PluginState::Inactive).unwrap();
        assert!(inactive.contains("installed and not active"), "{inactive}");
        assert!(!inactive.contains("install-local"), "{inactive}");
        let gcp = Found {
            provider: "gcp",
            from: vec!["GOOGLE_APPLICATION_CREDENTIALS".into()],
        };
        let missing = activation_hint(&gcp, PluginState::NotInstalled).unwrap();
        assert!(
            missing.contains("`svc plugins install-local PATH/svc-plugin-gcp`")
                && missing.contains("active = [\"gcp\"]"),
            "{missing}"
        );
    }

    #[test]
    fn the_data_directory_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    /// A task that panics is reported not ready with its message, and is
    /// started again; once it runs, the fault is gone.
    #[tokio::test]
    async fn a_stopped_task_is_reported_and_started_again() {
        let state = AppState::new("t".into());
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let task = {
            let (state, runs) = (state.clone(), runs.clone());
            move || {
                let (state, runs, tx) = (state.clone(), runs.clone(), tx.clone());
                async move {
                    let run = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if run == 0 {
                        let _ = tx.send(run);
                        panic!("interval overflow");
                    }
                    state.clear_fault("worker");
                    let _ = tx.send(run);
                    std::future::pending::<()>().await;
                }
            }
        };
        let supervisor = tokio::spawn(supervise("worker", state.clone(), task));
        assert_eq!(rx.recv().await, Some(0));
        // The supervisor records the fault before it pauses; the second run
        // cannot start before the pause ends.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let message = loop {
            let m = state.readiness().map_err(|e| e.message).err().unwrap_or_default();
            if m.contains("worker") || std::time::Instant::now() > deadline {
                break m;
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(message, "not ready: worker: stopped: interval overflow; starting again");
        assert_eq!(rx.recv().await, Some(1));
        let message = state.readiness().map_err(|e| e.message).err().unwrap_or_default();
        assert_eq!(message, "the graph is still loading", "the fault is cleared");
        supervisor.abort();
    }
}

//! Shared state of the HTTP server.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::ws::Utf8Bytes;
use svc_engine::Engine;
use tokio::sync::broadcast;

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::plugins::{PackageRegistry, PluginCatalog};

/// Capacity of the in-memory fan-out of ledger events to WebSocket clients.
/// A client that falls further behind is told so and replays from the store.
pub const EVENT_FANOUT: usize = 4096;

#[derive(Clone)]
pub struct AppState {
    pub inner: Arc<Inner>,
}

pub struct Inner {
    /// Set once the graph is hydrated; until then `/readyz` and `/api` answer 503.
    engine: OnceLock<Arc<Engine>>,
    /// The tokens (`$SVC_DATA_DIR/tokens.json`) and the dashboard sessions.
    pub auth: crate::auth::credentials::Auth,
    /// Committed ledger events, in order, as `(seq, envelope JSON text)`.
    /// The text is shared: every client sends the same bytes without a copy.
    pub events: broadcast::Sender<(u64, Utf8Bytes)>,
    pub metrics: Metrics,
    pub started: Instant,
    pub version: &'static str,
    /// The installed plugins, once the daemon has discovered them.
    plugins: OnceLock<Arc<dyn PluginCatalog>>,
    /// The registry client, once the daemon has set it up.
    registry: OnceLock<Arc<dyn PackageRegistry>>,
    /// The compliance exporter, once the daemon has started it.
    exporter: OnceLock<Arc<crate::export::Exporter>>,
    /// The daemon's configuration file, once loaded.
    config: OnceLock<Arc<dyn crate::config::ConfigService>>,
    /// The notifier (`[notify]`), once the daemon has started it.
    notifier: OnceLock<Arc<crate::notify::Notifier>>,
    /// `GET /api/v1/anomalies`, computed at most once per 30 s.
    pub anomalies: crate::routes::anomalies::cache::Cache,
    /// Answers worked out from the whole graph, kept until it changes.
    pub derived: crate::derived::Derived,
    /// The assistant's conversations with a model.
    pub conversations: crate::assistant::conversations::Conversations,
    /// The Terraform states and repository of `[iac]`, as last fetched.
    pub iac: crate::iac::Iac,
    /// Builds the routes the assistant's tools call: set by the router
    /// itself ([`AppState::set_router_builder`]).
    router_builder: OnceLock<fn(AppState) -> axum::Router>,
    /// Names of the scan sources whose estate is simulated (the mock
    /// estate): what `graph/stats` reports as `simulated`.
    simulated_sources: OnceLock<Vec<String>>,
    /// Parts of the daemon that cannot make progress, by name, with why:
    /// while any is listed, `/readyz` answers 503 naming them.
    faults: parking_lot::Mutex<BTreeMap<&'static str, String>>,
    /// Set while this node is a cluster standby: writes are refused,
    /// naming the leader.
    standby: parking_lot::RwLock<Option<Standby>>,
}

/// This node is a standby of a cluster: it answers reads; writes go to the
/// leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standby {
    /// This node's id.
    pub node_id: String,
    /// The leader's id and base URL, when one is known.
    pub leader: Option<(String, String)>,
}

impl AppState {
    /// A state whose only token is the admin token `token`, kept in
    /// memory (tests and benches).
    pub fn new(token: String) -> AppState {
        AppState::with_tokens(crate::auth::tokens::TokenStore::in_memory(&token))
    }

    /// A state that authenticates with `tokens`.
    pub fn with_tokens(tokens: crate::auth::tokens::TokenStore) -> AppState {
        let (events, _) = broadcast::channel(EVENT_FANOUT);
        AppState {
            inner: Arc::new(Inner {
                engine: OnceLock::new(),
                auth: crate::auth::credentials::Auth {
                    tokens,
                    sessions: Default::default(),
                },
                events,
                metrics: Metrics::new(),
                started: Instant::now(),
                plugins: OnceLock::new(),
                registry: OnceLock::new(),
                simulated_sources: OnceLock::new(),
                exporter: OnceLock::new(),
                config: OnceLock::new(),
                notifier: OnceLock::new(),
                anomalies: Default::default(),
                derived: Default::default(),
                conversations: Default::default(),
                iac: Default::default(),
                router_builder: OnceLock::new(),
                faults: Default::default(),
                standby: Default::default(),
                version: env!("CARGO_PKG_VERSION"),
            }),
        }
    }

    /// Marks the daemon ready: wires ledger events to WebSocket clients and
    /// scan reports to metrics.
    pub fn set_engine(&self, engine: Arc<Engine>) {
        let events = self.inner.events.clone();
        engine.ledger().add_listener(Box::new(move |e| {
            let envelope = crate::routes::history::body::envelope_text(e);
            // No receivers is fine: nobody is listening.
            let _ = events.send((e.seq, Utf8Bytes::from(envelope)));
        }));
        // Weak: the engine must not keep the server state (and so itself) alive.
        let inner = Arc::downgrade(&self.inner);
        engine.add_scan_listener(Box::new(move |report| {
            if let Some(inner) = inner.upgrade() {
                inner.metrics.observe_scan(report);
            }
        }));
        if let Some(report) = engine.last_report() {
            self.inner.metrics.observe_scan(&report);
        }
        let _ = self.inner.engine.set(engine);
    }

    pub fn engine(&self) -> Result<&Arc<Engine>, ApiError> {
        self.inner
            .engine
            .get()
            .ok_or_else(|| ApiError::not_ready("the graph is still loading"))
    }

    /// Marks `part` of the daemon unable to make progress, and why: the
    /// daemon is not ready until [`AppState::clear_fault`].
    pub fn set_fault(&self, part: &'static str, why: impl Into<String>) {
        self.inner.faults.lock().insert(part, why.into());
    }

    /// Marks this node a cluster standby (`Some`) or the one that acts
    /// (`None`, also a node alone).
    pub fn set_standby(&self, standby: Option<Standby>) {
        *self.inner.standby.write() = standby;
    }

    /// Whether this node is a standby, and of which leader.
    pub fn standby(&self) -> Option<Standby> {
        self.inner.standby.read().clone()
    }

    /// `part` makes progress again.
    pub fn clear_fault(&self, part: &'static str) {
        self.inner.faults.lock().remove(part);
    }

    /// Ready: the graph is loaded, no part of the daemon is stuck and every
    /// store can be written ([`Engine::storage_faults`]); otherwise why not
    /// (503 `not_ready`, naming each stuck part).
    pub fn readiness(&self) -> Result<(), ApiError> {
        let mut why: Vec<String> = self
            .inner
            .faults
            .lock()
            .iter()
            .map(|(part, why)| format!("{part}: {why}"))
            .collect();
        if let Some(engine) = self.inner.engine.get() {
            why.extend(
                engine
                    .storage_faults()
                    .into_iter()
                    .map(|(part, f)| format!("{part}: {f}")),
            );
        }
        if !why.is_empty() {
            return Err(ApiError::not_ready(format!("not ready: {}", why.join("; "))));
        }
        self.engine().map(|_| ())
    }

    /// Supplies the plugin catalog (set once, at start).
    pub fn set_plugins(&self, catalog: Arc<dyn PluginCatalog>) {
        let _ = self.inner.plugins.set(catalog);
    }

    pub fn plugins(&self) -> Option<Arc<dyn PluginCatalog>> {
        self.inner.plugins.get().cloned()
    }

    pub fn set_registry(&self, registry: Arc<dyn PackageRegistry>) {
        let _ = self.inner.registry.set(registry);
    }

    pub fn registry(&self) -> Option<Arc<dyn PackageRegistry>> {
        self.inner.registry.get().cloned()
    }

    /// Names the scan sources whose estate is simulated (set once, at start).
    pub fn set_simulated_sources(&self, names: Vec<String>) {
        let _ = self.inner.simulated_sources.set(names);
    }

    /// Whether scan source `name` reports a simulated estate.
    pub fn is_simulated(&self, name: &str) -> bool {
        self.inner
            .simulated_sources
            .get()
            .is_some_and(|names| names.iter().any(|n| n == name))
    }

    /// Supplies the compliance exporter (set once, at start).
    pub fn set_exporter(&self, exporter: Arc<crate::export::Exporter>) {
        let _ = self.inner.exporter.set(exporter);
    }

    pub fn exporter(&self) -> Option<Arc<crate::export::Exporter>> {
        self.inner.exporter.get().cloned()
    }

    /// Supplies the configuration service (set once, at start).
    pub fn set_config(&self, config: Arc<dyn crate::config::ConfigService>) {
        let _ = self.inner.config.set(config);
    }

    /// Sets how the daemon's routes are built, for the assistant's tools
    /// to call them in process (set once).
    pub fn set_router_builder(&self, build: fn(AppState) -> axum::Router) {
        let _ = self.inner.router_builder.set(build);
    }

    /// The daemon's routes over this state, for the assistant's tools: an
    /// empty router (every call answers 404) before they were set.
    pub fn tool_router(&self) -> axum::Router {
        match self.inner.router_builder.get() {
            Some(build) => build(self.clone()),
            None => axum::Router::new(),
        }
    }

    pub fn config(&self) -> Option<Arc<dyn crate::config::ConfigService>> {
        self.inner.config.get().cloned()
    }

    /// Supplies the notifier (set once, at start).
    pub fn set_notifier(&self, notifier: Arc<crate::notify::Notifier>) {
        let _ = self.inner.notifier.set(notifier);
    }

    pub fn notifier(&self) -> Option<Arc<crate::notify::Notifier>> {
        self.inner.notifier.get().cloned()
    }

    pub fn is_ready(&self) -> bool {
        self.inner.engine.get().is_some()
    }
}

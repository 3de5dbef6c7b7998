//! The engine: the graph, its stores and the scan pipeline, behind one handle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use svc_graph::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::ranks;
use thiserror::Error;
use tracing::{debug, info, warn};

use crate::analysis::linker::LinkReport;
use crate::analysis::pattern::PatternReport;
use crate::analysis::reach::{self, Assessment};
use crate::analysis::traffic::{self, FlowRecord, TrafficReport};
use crate::clock::Clock;
use crate::graph::{DirtyRows, Graph};
use crate::heuristics::{Analyzer, FindingSet};
use crate::intern::Interner;
use crate::scan::{ScanLimits, ScanReport, Source};
use crate::store::ledger::{Ledger, LedgerError};
use crate::store::snapshot::{self, SnapshotKey};
use crate::store::{CommitMeta, GraphStore, GraphVersions, StoreError};

/// File names under the data directory.
pub const GRAPH_FILE: &str = "graph.redb";
pub const EVENTS_FILE: &str = "events.redb";
pub const SNAPSHOT_FILE: &str = "graph.snap";

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("graph store {path}: symbol table: {message}")]
    Symbols { path: PathBuf, message: String },
    #[error("cannot create data directory {path}: {source}")]
    DataDir { path: PathBuf, source: std::io::Error },
}

type ScanListener = Box<dyn Fn(&ScanReport) + Send + Sync>;

pub struct Engine {
    data_dir: PathBuf,
    interner: Arc<Interner>,
    graph: RwLock<Graph>,
    store: GraphStore,
    ledger: Arc<Ledger>,
    clock: Arc<dyn Clock>,
    session_id: String,
    scanning: AtomicBool,
    scan_seq: AtomicU64,
    /// When the estate of the last committed scan was observed (Unix seconds, 0 unknown).
    observed_s: AtomicU64,
    rules: RwLock<crate::heuristics::builtin::Selection>,
    last_commit_us: AtomicU64,
    /// Interner entries already written to the store.
    persisted_symbols: Mutex<usize>,
    /// Locked for a whole scan and for each remediation step; use
    /// [`Engine::lock_sources`] and [`Engine::try_lock_sources_for`].
    sources: Mutex<Vec<Box<dyn Source>>>,
    analyzers: Mutex<Vec<Box<dyn Analyzer>>>,
    /// Sources and analyzers set while the lists were in use (a scan or a
    /// remediation step held them): whoever locks a list next puts them in
    /// its place, so a configuration change never waits for a scan.
    pending_sources: Mutex<Option<Vec<Box<dyn Source>>>>,
    pending_analyzers: Mutex<Option<Vec<Box<dyn Analyzer>>>>,
    /// Findings of the last scan.
    findings: RwLock<Arc<FindingSet>>,
    /// Whether formal verification runs (`oracle.enabled`).
    oracle: AtomicBool,
    /// Reachability and proof paths of the last scan; after a restart,
    /// recomputed on first use.
    assessment: RwLock<Option<Arc<Assessment>>>,
    /// What the ghost linker did in the last scan.
    links: RwLock<Arc<LinkReport>>,
    /// What each node offered and asked the linker in the last scan.
    pub(crate) link_cache: Mutex<crate::analysis::linker::Cache>,
    /// Each node's built-in rule answer of the last scan, with what it read.
    pub(crate) rule_cache: Mutex<crate::heuristics::builtin::Cache>,
    /// What the pattern phase of the last scan found.
    pattern: RwLock<Arc<PatternReport>>,
    source_config: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
    last_report: RwLock<Option<ScanReport>>,
    listeners: RwLock<Vec<ScanListener>>,
    /// Where the graph came from at start: `snapshot` or `graph store`.
    loaded_from: &'static str,
    /// Cost history and anomalies (`engine.signal_analysis`).
    signal: crate::signal::Signal,
    /// The remediation pipeline, sagas and the ignore list.
    pub(crate) remediation: svc_remediation::Remediation,
    /// Provider -> the source whose last scan reported it, for routing
    /// remediation to a plugin that serves providers beyond its name.
    served: RwLock<BTreeMap<String, String>>,
    /// Source -> the providers its last successful scan declared or
    /// reported (kept in the graph store): a scan in which it fails retires
    /// none of their resources, whichever other source reports them.
    answered: RwLock<BTreeMap<String, BTreeSet<String>>>,
    /// Whether the stored `answered` could be read at start.
    answered_read: bool,
    /// The snapshot being written behind the last commit, if any.
    snapshot_writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Policy rules (`engine.policy`).
    policies: crate::policy::Book,
    /// Installed policy packs, read at each scan.
    packs: RwLock<Option<Arc<dyn crate::policy::PackSource>>>,
    /// Called as each scan starts, before it takes the sources.
    before_scan: RwLock<Option<BeforeScan>>,
    /// What each source may take and send in a scan.
    limits: RwLock<ScanLimits>,
}

/// Puts `newer` in `held`'s place, except that each one with the identity
/// of one in `held` gives way to it (which keeps its running plugin);
/// returns those of `held` that were replaced.
fn keep_same<T: ?Sized>(held: &mut Vec<Box<T>>, newer: Vec<Box<T>>, identity: fn(&T) -> Option<String>) -> Vec<Box<T>> {
    let mut old: Vec<Option<Box<T>>> = std::mem::take(held).into_iter().map(Some).collect();
    for new in newer {
        let same = identity(&*new).and_then(|id| {
            old.iter_mut()
                .find(|o| {
                    o.as_deref()
                        .is_some_and(|o| identity(o).as_deref() == Some(id.as_str()))
                })
                .and_then(Option::take)
        });
        held.push(same.unwrap_or(new));
    }
    old.into_iter().flatten().collect()
}

/// Stops what was replaced (plugin processes are asked to shut down and
/// given their grace period) on a thread of its own, so whoever replaced
/// them does not wait for it.
fn stop_in_background<T: Send + 'static>(what: &'static str, old: Vec<T>, stop: fn(&mut T)) {
    if old.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("svc-stop-replaced".into())
        .spawn(move || {
            for mut item in old {
                stop(&mut item);
            }
        });
    if let Err(e) = spawned {
        // Dropped here instead: their processes are killed outright.
        warn!(what, error = %e, "cannot start a thread to stop what was replaced");
    }
}

/// What runs as each scan starts ([`Engine::set_before_scan`]).
pub type BeforeScan = Arc<dyn Fn() + Send + Sync>;

impl Drop for Engine {
    fn drop(&mut self) {
        self.remediation.settle();
        self.wait_snapshot();
    }
}

/// Held while a scan runs; dropping it lets the next scan start.
pub struct ScanPermit {
    engine: Arc<Engine>,
}

impl Drop for ScanPermit {
    fn drop(&mut self) {
        self.engine.scanning.store(false, Ordering::Release);
    }
}

impl ScanPermit {
    /// Runs the whole pipeline over the engine's sources.
    pub fn run(self) -> Result<ScanReport, EngineError> {
        self.run_only(None)
    }

    /// Runs the pipeline over the sources that serve one of `providers`
    /// (all sources when `None`); resources of other providers are untouched.
    pub fn run_only(self, providers: Option<Vec<String>>) -> Result<ScanReport, EngineError> {
        self.run_with(providers, None)
    }

    /// As [`ScanPermit::run_only`], with each source's scan cut off after
    /// `timeout` when given (instead of [`Engine::set_scan_limits`]'s).
    pub fn run_with(
        self,
        providers: Option<Vec<String>>,
        timeout: Option<std::time::Duration>,
    ) -> Result<ScanReport, EngineError> {
        let engine = self.engine.clone();
        let hook = engine.before_scan.read().clone();
        if let Some(hook) = hook {
            hook();
        }
        let configs = engine.source_config.read().clone();
        let limits = *engine.limits.read();
        let limits = ScanLimits {
            timeout: timeout.or(limits.timeout),
            ..limits
        };
        let mut sources = engine.lock_sources();
        let mut analyzers = engine.analyzers.lock();
        engine.take_pending_analyzers(&mut analyzers);
        let report = crate::scan::run(
            &engine,
            &mut sources,
            &mut analyzers,
            &configs,
            providers.as_deref(),
            limits,
        );
        drop(analyzers);
        drop(sources);
        // Release the permit before telling anyone, so a client that hears
        // the scan finished can start the next one.
        drop(self);
        let mut report = report?;
        crate::scan::announce(&engine, &mut report)?;
        *engine.last_report.write() = Some(report.clone());
        for l in engine.listeners.read().iter() {
            l(&report);
        }
        Ok(report)
    }
}

impl Engine {
    /// Opens (or creates) the stores under `data_dir` and loads the graph.
    /// A corrupt store is an error naming its file, never replaced.
    pub fn open(data_dir: &Path, session_id: &str, clock: Arc<dyn Clock>) -> Result<Engine, EngineError> {
        std::fs::create_dir_all(data_dir).map_err(|source| EngineError::DataDir {
            path: data_dir.to_owned(),
            source,
        })?;
        let graph_path = data_dir.join(GRAPH_FILE);
        let snap_path = data_dir.join(SNAPSHOT_FILE);
        let started = std::time::Instant::now();
        let store = GraphStore::open(&graph_path)?;
        let (symbols, meta) = store.load_meta()?;
        let interner = if symbols.is_empty() {
            Interner::new()
        } else {
            Interner::from_strings(&symbols).map_err(|message| EngineError::Symbols {
                path: graph_path.clone(),
                message,
            })?
        };
        let persisted = symbols.len();
        let interner = Arc::new(interner);
        let key = SnapshotKey::new(&meta, persisted);
        let (mut graph, from) = match snapshot::read(&snap_path, key) {
            Ok(shards) => (
                Graph::from_shards(interner.clone(), shards.nodes, shards.edges, meta.generation),
                "snapshot",
            ),
            Err(e) => {
                if meta.scan_seq > 0 {
                    warn!(error = %e, "snapshot not used; replaying the graph store");
                }
                let loaded = store.load()?;
                let mut graph = Graph::new(interner.clone());
                graph.load_nodes(&loaded.nodes);
                let dangling = graph.load_edges(&loaded.edges);
                if dangling > 0 {
                    warn!(dangling, "stored edges name nodes that are not stored; skipped");
                }
                graph.set_generation(meta.generation);
                graph.shrink_to_fit();
                if meta.scan_seq > 0
                    && let Err(e) = snapshot::write(&snap_path, &graph, key)
                {
                    warn!(error = %e, "cannot write the snapshot; the next start replays the store again");
                }
                (graph, "graph store")
            }
        };
        graph.rebuild_adjacency(clock.now_us());
        info!(
            from,
            ms = started.elapsed().as_millis() as u64,
            nodes = graph.node_rows(),
            edges = graph.edge_rows(),
            generation = meta.generation,
            path = %graph_path.display(),
            "graph loaded"
        );
        let loaded_meta = meta;
        let remediation =
            svc_remediation::Remediation::load(svc_remediation::RemediationStore::load_remediation(&store)?);
        let signal = crate::signal::Signal::open(&store, &interner, &graph, meta.scan_seq, clock.now_us())?;
        let (answered, answered_read) = match store.load_source_providers() {
            Ok(a) => (a, true),
            Err(e) => {
                warn!(error = %e, "cannot read which providers each source answered for; learnt again from the next scans");
                (BTreeMap::new(), false)
            }
        };
        let ledger = Ledger::open(&data_dir.join(EVENTS_FILE), session_id, clock.clone())?;
        let policies = crate::policy::Book::open(&store)?;
        Ok(Engine {
            data_dir: data_dir.to_owned(),
            interner,
            graph: RwLock::new(ranks::GRAPH, graph),
            store,
            ledger: Arc::new(ledger),
            clock,
            session_id: session_id.to_owned(),
            scanning: AtomicBool::new(false),
            scan_seq: AtomicU64::new(loaded_meta.scan_seq),
            observed_s: AtomicU64::new(loaded_meta.observed_s),
            rules: RwLock::new(ranks::RULES, crate::heuristics::builtin::Selection::default()),
            last_commit_us: AtomicU64::new(loaded_meta.commit_us),
            persisted_symbols: Mutex::new(ranks::PERSISTED_SYMBOLS, persisted),
            sources: Mutex::new(ranks::SOURCES, Vec::new()),
            analyzers: Mutex::new(ranks::ANALYZERS, Vec::new()),
            pending_sources: Mutex::new(ranks::PENDING_SOURCES, None),
            pending_analyzers: Mutex::new(ranks::PENDING_ANALYZERS, None),
            findings: RwLock::new(ranks::FINDINGS, Arc::new(FindingSet::default())),
            oracle: AtomicBool::new(true),
            assessment: RwLock::new(ranks::ASSESSMENT, None),
            links: RwLock::new(ranks::LINKS, Arc::new(LinkReport::default())),
            link_cache: Mutex::new(ranks::LINK_CACHE, Default::default()),
            rule_cache: Mutex::new(ranks::RULE_CACHE, Default::default()),
            pattern: RwLock::new(ranks::PATTERN, Arc::new(PatternReport::default())),
            source_config: RwLock::new(ranks::SOURCE_CONFIG, BTreeMap::new()),
            last_report: RwLock::new(ranks::LAST_REPORT, None),
            listeners: RwLock::new(ranks::LISTENERS, Vec::new()),
            loaded_from: from,
            signal,
            snapshot_writer: Mutex::new(ranks::SNAPSHOT_WRITER, None),
            served: RwLock::new(ranks::SERVED, BTreeMap::new()),
            answered: RwLock::new(ranks::ANSWERED, answered),
            answered_read,
            remediation,
            policies,
            packs: RwLock::new(ranks::PACKS, None),
            before_scan: RwLock::new(ranks::BEFORE_SCAN, None),
            limits: RwLock::new(ranks::LIMITS, ScanLimits::default()),
        })
    }

    /// Where the graph came from at start: `snapshot` or `graph store`.
    pub fn loaded_from(&self) -> &'static str {
        self.loaded_from
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
    pub fn interner(&self) -> &Arc<Interner> {
        &self.interner
    }
    /// Shared read access to the live graph. Do not hold it across an await.
    pub fn graph(&self) -> RwLockReadGuard<'_, Graph> {
        self.graph.read()
    }
    pub(crate) fn graph_mut(&self) -> RwLockWriteGuard<'_, Graph> {
        self.graph.write()
    }
    pub fn store(&self) -> &GraphStore {
        &self.store
    }
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
    pub fn now_us(&self) -> u64 {
        self.clock.now_us()
    }
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    pub fn is_scanning(&self) -> bool {
        self.scanning.load(Ordering::Acquire)
    }
    /// Scans finished in this data directory.
    pub fn scans_completed(&self) -> u64 {
        self.scan_seq.load(Ordering::Acquire)
    }
    pub fn last_commit_us(&self) -> u64 {
        self.last_commit_us.load(Ordering::Acquire)
    }
    pub fn last_report(&self) -> Option<ScanReport> {
        self.last_report.read().clone()
    }

    /// Replaces the sources scanned from the next scan on.
    pub fn set_sources(&self, sources: Vec<Box<dyn Source>>) {
        *self.pending_sources.lock() = Some(sources);
        // At once when no scan or remediation step holds the list (the
        // sources replaced stop now); otherwise when it lets go.
        if let Some(mut held) = self.sources.try_lock() {
            self.take_pending_sources(&mut held);
        }
    }

    /// Replaces the heuristic analyzers run from the next scan on.
    pub fn set_analyzers(&self, analyzers: Vec<Box<dyn Analyzer>>) {
        *self.pending_analyzers.lock() = Some(analyzers);
        if let Some(mut held) = self.analyzers.try_lock() {
            self.take_pending_analyzers(&mut held);
        }
    }

    fn take_pending_analyzers(&self, held: &mut Vec<Box<dyn Analyzer>>) {
        if let Some(newer) = self.pending_analyzers.lock().take() {
            let replaced = keep_same(held, newer, |a| a.identity());
            stop_in_background("analyzers", replaced, |a| a.stop());
        }
    }

    /// The sources, with those set since the list was last locked.
    pub(crate) fn lock_sources(&self) -> MutexGuard<'_, Vec<Box<dyn Source>>> {
        let mut held = self.sources.lock();
        self.take_pending_sources(&mut held);
        held
    }

    /// [`Engine::lock_sources`], waiting at most `wait`.
    pub(crate) fn try_lock_sources_for(
        &self,
        wait: std::time::Duration,
    ) -> Option<MutexGuard<'_, Vec<Box<dyn Source>>>> {
        let mut held = self.sources.try_lock_for(wait)?;
        self.take_pending_sources(&mut held);
        Some(held)
    }

    fn take_pending_sources(&self, held: &mut Vec<Box<dyn Source>>) {
        if let Some(newer) = self.pending_sources.lock().take() {
            let replaced = keep_same(held, newer, |s| s.identity());
            stop_in_background("sources", replaced, |s| s.stop());
        }
    }

    /// The findings of the last scan (empty before the first scan of this run).
    pub fn findings(&self) -> Arc<FindingSet> {
        self.findings.read().clone()
    }

    pub(crate) fn set_findings(&self, set: FindingSet) {
        let old = std::mem::replace(&mut *self.findings.write(), Arc::new(set));
        // Hundreds of thousands of findings take a while to free; the scan
        // does not wait for it.
        let _ = std::thread::Builder::new()
            .name("svc-free".into())
            .spawn(move || drop(old));
    }

    /// Changes the findings of the last scan in place (copied only when a
    /// reader still holds them).
    pub(crate) fn update_findings(&self, f: impl FnOnce(&mut FindingSet)) {
        let mut guard = self.findings.write();
        f(Arc::make_mut(&mut guard));
    }

    /// The policy rules and what their last evaluation found.
    pub fn policies(&self) -> &crate::policy::Book {
        &self.policies
    }

    /// Runs `hook` as each scan starts, before the scan takes the sources,
    /// so the hook may replace them ([`Engine::set_sources`]): the daemon
    /// looks for plugins installed since the last scan.
    pub fn set_before_scan(&self, hook: BeforeScan) {
        *self.before_scan.write() = Some(hook);
    }

    /// What each source may take and send from the next scan on
    /// (`daemon.scan_timeout`, `daemon.scan_max_nodes`,
    /// `daemon.scan_max_edges`); a scan request's own timeout wins.
    pub fn set_scan_limits(&self, limits: ScanLimits) {
        *self.limits.write() = limits;
    }

    /// Reads installed policy packs from `source` at every scan from now on.
    pub fn set_pack_source(&self, source: Arc<dyn crate::policy::PackSource>) {
        *self.packs.write() = Some(source);
    }

    pub(crate) fn pack_source(&self) -> Option<Arc<dyn crate::policy::PackSource>> {
        self.packs.read().clone()
    }

    /// Adds policy rules (all or none); `author` is recorded on each
    /// `POLICY_CHANGE` event.
    pub fn add_policies(
        &self,
        specs: &[crate::policy::RuleSpec],
        author: &str,
    ) -> Result<Vec<crate::policy::Rule>, crate::policy::PolicyError> {
        self.policies
            .add(specs, author, self.now_us(), &self.store, &self.ledger)
    }

    pub fn remove_policy(&self, id: &str, author: &str) -> Result<crate::policy::Rule, crate::policy::PolicyError> {
        self.policies.remove(id, author, &self.store, &self.ledger)
    }

    pub fn toggle_policy(&self, id: &str, author: &str) -> Result<crate::policy::Rule, crate::policy::PolicyError> {
        self.policies.toggle(id, author, &self.store, &self.ledger)
    }

    pub fn reorder_policies(
        &self,
        ids: &[String],
        author: &str,
    ) -> Result<Vec<crate::policy::Rule>, crate::policy::PolicyError> {
        self.policies.reorder(ids, author, &self.store, &self.ledger)
    }

    /// The ids of the enforcing `block` rules that matched `id` in the last
    /// scan, in priority order: remediation keeps such a node at `sau_gate`.
    pub fn blocked_by(&self, id: crate::ids::NodeId) -> Vec<String> {
        crate::policy::blocked_by(self, id)
    }

    /// Adds flow records to the graph as traffic edges and commits them
    /// (see [`traffic`]). `None` while a scan runs: the caller retries.
    /// Records must have passed [`traffic::check`].
    pub fn ingest_traffic(
        self: &Arc<Self>,
        records: &[FlowRecord],
        mut report: TrafficReport,
    ) -> Result<Option<TrafficReport>, EngineError> {
        let Some(_permit) = self.try_start_scan() else {
            return Ok(None);
        };
        let now_us = self.now_us();
        let scan_seq = self.scans_completed();
        let rows = {
            let mut g = self.graph_mut();
            let ips = traffic::IpIndex::build(&g, now_us);
            traffic::apply(&mut g, &ips, records, now_us, scan_seq as u32, &mut report);
            if report.edges_added + report.edges_updated > 0 {
                g.rebuild_adjacency(now_us);
            }
            g.take_dirty_rows()
        };
        if !rows.is_empty() {
            let meta = CommitMeta {
                generation: self.graph().generation(),
                scan_seq,
                commit_us: now_us,
                rows: 0,
                observed_s: self.observed_s(),
            };
            self.commit(rows, meta)?;
        }
        Ok(Some(report))
    }

    /// Switches formal verification on or off from the next scan on.
    pub fn set_oracle_enabled(&self, on: bool) {
        self.oracle.store(on, Ordering::Release);
    }

    pub fn oracle_enabled(&self) -> bool {
        self.oracle.load(Ordering::Acquire)
    }

    /// Reachability, proof paths and risk of the last scan. After a
    /// restart the proof paths of the loaded graph are computed on first
    /// use (the verdicts themselves are stored with the nodes).
    pub fn assessment(&self) -> Arc<Assessment> {
        if let Some(a) = self.assessment.read().clone() {
            return a;
        }
        let mut a = if !self.oracle_enabled() {
            Assessment::disabled(self.scans_completed(), self.now_us())
        } else {
            let g = self.graph();
            reach::run(&g, self.now_us(), self.scans_completed(), &[])
        };
        a.release_verdicts();
        // A scan that finished meanwhile wins.
        self.assessment.write().get_or_insert(Arc::new(a)).clone()
    }

    pub(crate) fn set_assessment(&self, a: Assessment) {
        *self.assessment.write() = Some(Arc::new(a));
    }

    /// What the ghost linker did in the last scan.
    pub fn links(&self) -> Arc<LinkReport> {
        self.links.read().clone()
    }

    pub(crate) fn set_links(&self, l: LinkReport) {
        *self.links.write() = Arc::new(l);
    }

    /// What the pattern phase of the last scan found (empty before the
    /// first scan of this run).
    pub fn pattern(&self) -> Arc<PatternReport> {
        self.pattern.read().clone()
    }

    pub(crate) fn set_pattern(&self, report: PatternReport) {
        *self.pattern.write() = Arc::new(report);
    }

    /// Cost history and anomalies.
    pub fn signal(&self) -> &crate::signal::Signal {
        &self.signal
    }

    /// The anomalies of the last analysed scan (kept across restarts).
    pub fn anomalies(&self) -> Arc<crate::signal::Anomalies> {
        self.signal.anomalies()
    }

    /// Stops every source and analyzer (their plugin processes), waiting up
    /// to `wait` for a running scan to let go of them; returns whether it did.
    pub fn stop_plugins(&self, wait: std::time::Duration) -> bool {
        let (Some(mut sources), Some(mut analyzers)) =
            (self.sources.try_lock_for(wait), self.analyzers.try_lock_for(wait))
        else {
            return false;
        };
        for s in sources.iter_mut() {
            s.stop();
        }
        for a in analyzers.iter_mut() {
            a.stop();
        }
        true
    }

    /// Sets the scan configuration of one source (by its name).
    pub fn set_source_config(&self, source: &str, config: BTreeMap<String, String>) {
        self.source_config.write().insert(source.to_owned(), config);
    }

    /// Providers the configured sources serve, sorted.
    pub fn source_providers(&self) -> Vec<String> {
        let mut p: Vec<String> = self.lock_sources().iter().flat_map(|s| s.providers()).collect();
        p.sort();
        p.dedup();
        p
    }

    /// Names of the configured sources.
    pub fn source_names(&self) -> Vec<String> {
        self.lock_sources().iter().map(|s| s.name().to_owned()).collect()
    }

    /// Called after every finished scan, on the scanning thread.
    pub fn add_scan_listener(&self, f: ScanListener) {
        self.listeners.write().push(f);
    }

    /// Starts a scan unless one is running.
    pub fn try_start_scan(self: &Arc<Self>) -> Option<ScanPermit> {
        self.scanning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| ScanPermit { engine: self.clone() })
    }

    /// Which built-in rules the next scans run.
    pub fn set_rule_selection(&self, selection: crate::heuristics::builtin::Selection) {
        *self.rules.write() = selection;
    }

    pub fn rule_selection(&self) -> crate::heuristics::builtin::Selection {
        self.rules.read().clone()
    }

    /// When the estate of the last committed scan was observed (Unix
    /// seconds; 0 before any scan).
    pub fn observed_s(&self) -> u64 {
        self.observed_s.load(Ordering::Acquire)
    }

    pub(crate) fn next_scan_seq(&self) -> u64 {
        self.scan_seq.load(Ordering::Acquire) + 1
    }

    /// Writes `encoded` on a thread of its own, after the snapshot before it.
    fn write_snapshot_behind(&self, encoded: snapshot::Encoded) {
        let mut writer = self.snapshot_writer.lock();
        if let Some(previous) = writer.take() {
            let _ = previous.join();
        }
        let path = self.data_dir.join(SNAPSHOT_FILE);
        let spawned = std::thread::Builder::new().name("svc-snapshot".into()).spawn(move || {
            let t = std::time::Instant::now();
            let written = encoded.write(&path);
            drop(encoded);
            match written {
                Ok(bytes) => debug!(bytes, ms = t.elapsed().as_millis() as u64, "snapshot written"),
                Err(e) => warn!(error = %e, "cannot write the snapshot; the next start replays the graph store"),
            }
            // The encoded sections (about the graph's size) are freed in
            // the middle of the heaps; hand them back.
            crate::malloc::release();
        });
        match spawned {
            Ok(handle) => *writer = Some(handle),
            Err(e) => warn!(error = %e, "cannot start the snapshot writer; the next start replays the graph store"),
        }
    }

    /// Records that source `name` reported resources of `providers`.
    pub(crate) fn record_served(&self, name: &str, providers: impl Iterator<Item = String>) {
        let mut served = self.served.write();
        for p in providers {
            served.insert(p, name.to_owned());
        }
    }

    /// Provider -> the source that last reported it.
    pub(crate) fn served(&self) -> BTreeMap<String, String> {
        self.served.read().clone()
    }

    /// The sources that have ever completed a scan of this graph (as kept
    /// in the graph store), by name; `None` when the store's record could
    /// not be read at start (and no scan of this run has completed), so
    /// which sources filled the graph is not known.
    pub fn sources_seen(&self) -> Option<Vec<String>> {
        let answered = self.answered.read();
        (self.answered_read || !answered.is_empty()).then(|| answered.keys().cloned().collect())
    }

    /// Source -> the providers its last successful scan answered for.
    pub(crate) fn answered(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.answered.read().clone()
    }

    /// Records what source `name`'s successful scan answered for, and
    /// stores it when that changed.
    pub(crate) fn record_answered(&self, name: &str, providers: BTreeSet<String>) {
        let mut answered = self.answered.write();
        if answered.get(name) == Some(&providers) {
            return;
        }
        if let Err(e) = self.store.put_source_providers(name, &providers) {
            warn!(source = name, error = %e, "cannot store which providers the source answered for");
        }
        answered.insert(name.to_owned(), providers);
    }

    /// Waits until the last commit's snapshot is on disk (or has failed).
    pub fn wait_snapshot(&self) {
        if let Some(handle) = self.snapshot_writer.lock().take() {
            let _ = handle.join();
        }
    }

    /// Writes new symbols and changed versions durably, then advances the
    /// scan sequence.
    pub(crate) fn commit(&self, rows: DirtyRows, meta: CommitMeta) -> Result<(), EngineError> {
        let mut persisted = self.persisted_symbols.lock();
        let fresh = self.interner.strings_from(*persisted);
        let graph = self.graph();
        let meta = CommitMeta {
            rows: (graph.node_rows() + graph.edge_rows()) as u64,
            ..meta
        };
        let t = std::time::Instant::now();
        let versions = GraphVersions { graph: &graph, rows };
        let all = || GraphVersions {
            graph: &graph,
            rows: graph.all_rows(),
        };
        let commit_us = self.store.commit(*persisted, &fresh, &versions, all, meta)?;
        let changed = !versions.rows.is_empty();
        drop(versions);
        // The scan's `engine.sau` pass wrote its items behind the scan; this
        // commit's write transaction came after that one.
        self.remediation.settle();
        let store_ms = t.elapsed().as_millis() as u64;
        let t = std::time::Instant::now();
        let meta = CommitMeta { commit_us, ..meta };
        *persisted += fresh.len();
        if changed {
            // Encoded under the read lock, written behind the commit: the
            // store is the truth, and a snapshot that is late or fails to
            // write only slows the next start.
            let encoded = snapshot::encode(&graph, SnapshotKey::new(&meta, *persisted));
            self.write_snapshot_behind(encoded);
        }
        debug!(
            store_ms,
            snapshot_encode_ms = t.elapsed().as_millis() as u64,
            "committed"
        );
        drop(graph);
        self.scan_seq.store(meta.scan_seq, Ordering::Release);
        self.observed_s.store(meta.observed_s, Ordering::Release);
        self.last_commit_us.store(meta.commit_us, Ordering::Release);
        Ok(())
    }
}

//! The engine handle: the core and the subsystems it holds, and the scan permit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use svc_graph::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use thiserror::Error;
use tracing::{debug, info, warn};

use crate::analysis::linker::LinkReport;
use crate::analysis::pattern::PatternReport;
use crate::analysis::reach::{self, Assessment};
use crate::analysis::traffic::{self, FlowRecord, TrafficReport};
use crate::clock::Clock;
use crate::findings::Findings;
use crate::graph::Graph;
use crate::graph_core::Core;
use crate::heuristics::{Analyzer, FindingSet};
use crate::intern::Interner;
use crate::policy::Policies;
use crate::ranks;
use crate::scan::{ScanLimits, ScanListener, ScanReport, ScanState, Source};
use crate::sources::Sources;
use crate::store::ledger::{Ledger, LedgerError, NewEvent};
use crate::store::snapshot::{self, SnapshotKey};
use crate::store::{CommitMeta, GraphStore, StoreError};

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
    #[error(transparent)]
    Snapshot(#[from] crate::store::snapshot::SnapshotError),
    #[error("graph store {path}: symbol table: {message}")]
    Symbols { path: PathBuf, message: String },
    #[error("cannot create data directory {path}: {source}")]
    DataDir { path: PathBuf, source: std::io::Error },
    /// The scan committed, but its SCAN_COMPLETED could not be appended;
    /// it is appended once the ledger takes it ([`Engine::record_scans`]).
    #[error("scan {scan_seq} committed, but its SCAN_COMPLETED is not recorded yet: {source}")]
    Unrecorded { scan_seq: u64, source: LedgerError },
}

impl EngineError {
    /// The storage fault behind this error, if a store's file failed.
    pub fn fault(&self) -> Option<&svc_store::Fault> {
        match self {
            EngineError::Store(StoreError::Unavailable(f)) => Some(f),
            EngineError::Ledger(e) | EngineError::Unrecorded { source: e, .. } => e.fault(),
            _ => None,
        }
    }
}

/// The engine: the core (graph, stores, clock) and the subsystems that
/// own the rest of its state, each behind its own locks. A thread takes
/// locks in the order of ARCHITECTURE.md ("Lock order"), as ranked in
/// [`crate::ranks`].
pub struct Engine {
    pub(crate) core: Core,
    /// Sources, analyzers, their configuration and what they answered for.
    pub(crate) sources: Sources,
    /// What the analysis passes of the last scan found.
    pub(crate) findings: Findings,
    /// Policy rules (`engine.policy`) and installed packs.
    pub(crate) policy: Policies,
    /// Whether a scan runs, the scan sequence, the last report, the commit.
    pub(crate) scans: ScanState,
    /// Cost history and anomalies (`engine.signal_analysis`).
    pub(crate) signal: crate::signal::Signal,
    /// The remediation pipeline, sagas and the ignore list.
    pub(crate) remediation: svc_remediation::Remediation,
    /// Where the graph came from at start: `snapshot` or `graph store`.
    loaded_from: &'static str,
}

pub use crate::sources::BeforeScan;

impl Drop for Engine {
    fn drop(&mut self) {
        self.remediation.settle(self.core.store());
        self.wait_snapshot();
    }
}

/// Held while a scan runs; dropping it lets the next scan start.
pub struct ScanPermit {
    engine: Arc<Engine>,
}

impl Drop for ScanPermit {
    fn drop(&mut self) {
        self.engine.scans.finish();
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
        // Every committed scan is in the ledger before another commits; a
        // ledger that cannot be written stops the scan here.
        engine.record_scans()?;
        if let Some(hook) = engine.sources.before_scan() {
            hook();
        }
        let configs = engine.sources.configs();
        let limits = engine.sources.limits();
        let limits = ScanLimits {
            timeout: timeout.or(limits.timeout),
            ..limits
        };
        let mut sources = engine.sources.lock();
        let mut analyzers = engine.sources.lock_analyzers();
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
        if let Ok(r) = &report {
            engine.scans.set_announcing(r.scan_seq);
        }
        // Release the permit before telling anyone, so a client that hears
        // the scan finished can start the next one.
        drop(self);
        let mut report = report?;
        let announced = crate::scan::announce(engine.core.ledger(), &mut report, false);
        if let Err(e) = announced {
            engine.scans.keep_unannounced(report.clone());
            engine.scans.set_announcing(0);
            engine.scans.finished(&report);
            let scan_seq = report.scan_seq;
            return Err(match e {
                EngineError::Ledger(source) => EngineError::Unrecorded { scan_seq, source },
                other => other,
            });
        }
        engine.scans.set_announcing(0);
        engine.scans.finished(&report);
        Ok(report)
    }
}

/// The graph as `store` holds it now, in memory.
fn replay(store: &GraphStore, interner: Arc<Interner>, generation: u64) -> Result<Graph, EngineError> {
    let loaded = store.load()?;
    let mut graph = Graph::new(interner);
    graph.load_nodes(&loaded.nodes);
    let dangling = graph.load_edges(&loaded.edges);
    if dangling > 0 {
        warn!(dangling, "stored edges name nodes that are not stored; skipped");
    }
    graph.set_generation(generation);
    graph.shrink_to_fit();
    Ok(graph)
}

/// Writes `data_dir`'s `graph.snap` from `store` (its `graph.redb`), as
/// the engine would after its last commit, unless the snapshot there
/// already matches: a cluster's standby, which follows the leader's graph
/// store without an engine, keeps its next start fast this way. Returns
/// whether it wrote one. Holds the whole graph in memory while it runs.
pub fn write_snapshot_of(store: &GraphStore, data_dir: &Path) -> Result<bool, EngineError> {
    let (symbols, meta) = store.load_meta()?;
    if meta.scan_seq == 0 {
        return Ok(false);
    }
    let key = SnapshotKey::new(&meta, symbols.len());
    let path = data_dir.join(SNAPSHOT_FILE);
    if snapshot::matches(&path, key) {
        return Ok(false);
    }
    let interner = Interner::from_strings(&symbols).map_err(|message| EngineError::Symbols {
        path: store.path().to_owned(),
        message,
    })?;
    let graph = replay(store, Arc::new(interner), meta.generation)?;
    snapshot::write(&path, &graph, key)?;
    Ok(true)
}

/// The remediation items an engine opened by [`Engine::open_deferred`]
/// still has to read: [`ItemsLoad::load`] reads them, on whatever thread
/// the caller gives it.
#[must_use = "the engine's remediation pipeline waits until its items are loaded"]
pub struct ItemsLoad(());

impl ItemsLoad {
    /// Reads the stored items, sagas and ignore entries into `engine`'s
    /// pipeline. A corrupt one is an error naming the store; the pipeline
    /// then refuses to be used, so nothing acts on (or writes over) items
    /// it could not read, and the caller must stop.
    pub fn load(self, engine: &Engine) -> Result<(), EngineError> {
        let t = std::time::Instant::now();
        match svc_remediation::RemediationStore::load_remediation(engine.core.store()) {
            Ok(loaded) => {
                let items = loaded.items.len();
                engine.remediation.install(loaded);
                debug!(items, ms = t.elapsed().as_millis() as u64, "remediation items loaded");
                Ok(())
            }
            Err(e) => {
                engine.remediation.fail(e.to_string());
                Err(e.into())
            }
        }
    }
}

/// How a cluster's leader replicates its stores, in place from the moment
/// the engine opens them (opening may already write: a late
/// `SCAN_RECOVERED`, items planned again).
#[derive(Clone, Default)]
pub struct Replication {
    /// Ships each `graph.redb` write transaction before it commits.
    pub shipper: Option<crate::store::replica::Shipper>,
    /// Replicates each ledger append before it commits.
    pub replicator: Option<crate::store::ledger::Replicator>,
}

impl Engine {
    /// Opens (or creates) the stores under `data_dir` and loads the graph.
    /// A corrupt store is an error naming its file, never replaced.
    pub fn open(data_dir: &Path, session_id: &str, clock: Arc<dyn Clock>) -> Result<Engine, EngineError> {
        Engine::open_replicated(data_dir, session_id, clock, Replication::default())
    }

    /// [`Engine::open`] with both stores replicated from the start.
    pub fn open_replicated(
        data_dir: &Path,
        session_id: &str,
        clock: Arc<dyn Clock>,
        replication: Replication,
    ) -> Result<Engine, EngineError> {
        let (engine, items) = Engine::open_deferred(data_dir, session_id, clock, replication)?;
        items.load(&engine)?;
        Ok(engine)
    }

    /// [`Engine::open_replicated`] without reading the remediation items
    /// (millions at ten million resources): the graph can be served while
    /// [`ItemsLoad::load`] reads them. Until it has, whatever needs the
    /// pipeline (its routes, a scan's `engine.sau`) waits for it.
    pub fn open_deferred(
        data_dir: &Path,
        session_id: &str,
        clock: Arc<dyn Clock>,
        replication: Replication,
    ) -> Result<(Engine, ItemsLoad), EngineError> {
        std::fs::create_dir_all(data_dir).map_err(|source| EngineError::DataDir {
            path: data_dir.to_owned(),
            source,
        })?;
        let graph_path = data_dir.join(GRAPH_FILE);
        let snap_path = data_dir.join(SNAPSHOT_FILE);
        let store = GraphStore::open(&graph_path)?;
        if replication.shipper.is_some() {
            store.set_shipper(replication.shipper);
        }
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
        let (graph, from) = load_graph(&store, &graph_path, &snap_path, &interner, key, &meta, clock.as_ref())?;
        let remediation = svc_remediation::Remediation::pending();
        let loaded_meta = meta;
        let t = std::time::Instant::now();
        let signal = crate::signal::Signal::open(&store, &interner, &graph, meta.scan_seq, clock.now_us())?;
        let signal_ms = t.elapsed().as_millis() as u64;
        let t = std::time::Instant::now();
        let (answered, answered_read) = match store.load_source_providers() {
            Ok(a) => (a, true),
            Err(e) => {
                warn!(error = %e, "cannot read which providers each source answered for; learnt again from the next scans");
                (BTreeMap::new(), false)
            }
        };
        let ledger = Ledger::open(&data_dir.join(EVENTS_FILE), session_id, clock.clone())?;
        if replication.replicator.is_some() {
            ledger.set_replicator(replication.replicator);
        }
        let policies = crate::policy::Book::open(&store)?;
        debug!(
            signal_ms,
            rest_ms = t.elapsed().as_millis() as u64,
            "engine state loaded"
        );
        let engine = Engine {
            core: Core::new(
                data_dir.to_owned(),
                interner,
                RwLock::new(ranks::GRAPH, graph),
                store,
                ledger,
                clock,
                session_id.to_owned(),
            ),
            sources: Sources::new(answered, answered_read),
            findings: Findings::new(),
            policy: Policies::new(policies),
            scans: ScanState::new(&loaded_meta, persisted),
            signal,
            remediation,
            loaded_from: from,
        };
        if let Err(e) = engine.record_scans() {
            warn!(error = %e, "cannot check that the ledger records every committed scan; checked again before the next scan");
        }
        Ok((engine, ItemsLoad(())))
    }

    /// Makes the ledger record every scan the graph store committed: the
    /// last scan's SCAN_COMPLETED when it failed to be appended and its
    /// report is still here, else one `SCAN_RECOVERED` for the scans no
    /// event records. Runs at open, before each scan and after the ledger
    /// recovers. Returns the event appended, if one was.
    pub fn record_scans(&self) -> Result<Option<svc_store::ledger::Event>, EngineError> {
        let ledger = self.core.ledger();
        let committed = self.core.store().commit_meta()?;
        let recorded = ledger.recorded_scan_seq()?;
        // The last scan's SCAN_COMPLETED is being appended right now, just
        // after the permit was released.
        if committed.scan_seq == recorded + 1 && self.scans.announcing() == committed.scan_seq {
            return Ok(None);
        }
        if committed.scan_seq <= recorded {
            self.scans.take_unannounced(0);
            return Ok(None);
        }
        // The report stays kept until its event is appended: meanwhile the
        // scan still counts as unrecorded, and the daemon as not ready.
        if recorded + 1 == committed.scan_seq
            && let Some(mut report) = self.scans.unannounced_report(committed.scan_seq)
        {
            crate::scan::announce(ledger, &mut report, true)?;
            self.scans.take_unannounced(committed.scan_seq);
            info!(
                scan_seq = report.scan_seq,
                seq = report.event_seq,
                "SCAN_COMPLETED recorded late"
            );
            return ledger.get(report.event_seq).map_err(EngineError::from);
        }
        let first = recorded + 1;
        let scans = if first == committed.scan_seq {
            format!("scan {first}")
        } else {
            format!("scans {first} to {}", committed.scan_seq)
        };
        let payload = svc_store::ledger::events::ScanRecovered {
            first_scan_seq: first,
            scan_seq: committed.scan_seq,
            generation: committed.generation,
            committed_us: committed.commit_us,
            reason: "committed to the graph store, but no SCAN_COMPLETED was appended: the daemon stopped, \
                     or the ledger could not be written, in between"
                .to_owned(),
        };
        let message = format!("{scans} committed without a SCAN_COMPLETED; recorded on recovery");
        let event = ledger.append_one(NewEvent::of(None, "engine", message, &payload))?;
        warn!(
            first_scan_seq = first,
            scan_seq = committed.scan_seq,
            seq = event.seq,
            "committed scans recorded on recovery"
        );
        Ok(Some(event))
    }

    /// The stores that cannot make progress now, and why: a file that
    /// failed and is not open again (a full disk, an I/O error), or a ledger
    /// whose chain verification found broken. Empty when all is well.
    pub fn storage_faults(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(f) = self.core.store().fault() {
            out.push(("graph store", f.to_string()));
        }
        let ledger = self.core.ledger();
        if let Some(f) = ledger.fault() {
            out.push(("ledger", f.to_string()));
        }
        if let Some(b) = ledger.broken() {
            out.push(("ledger", LedgerError::Broken(b).to_string()));
        }
        if let Some(scan_seq) = self.scans.unannounced() {
            out.push((
                "ledger",
                format!("scan {scan_seq} committed, but its SCAN_COMPLETED is not recorded yet"),
            ));
        }
        out
    }

    /// Whether [`Engine::recover_storage`] has something to do: a store
    /// failed, or a committed scan's SCAN_COMPLETED waits for the ledger.
    pub fn needs_recovery(&self) -> bool {
        !self.storage_faults().is_empty()
    }

    /// Tries to bring failed stores back now: opens a failed file again
    /// and writes an empty durable transaction to it; once the ledger takes
    /// writes again, records the scans it missed ([`Engine::record_scans`]).
    /// Returns the faults that remain ([`Engine::storage_faults`]).
    pub fn recover_storage(&self) -> Vec<(&'static str, String)> {
        let store = self.core.store();
        if store.fault().is_some() && store.probe().is_ok() {
            info!(path = %store.path().display(), "graph store writable again");
        }
        let ledger = self.core.ledger();
        if ledger.fault().is_some() && ledger.probe().is_ok() {
            info!(path = %ledger.path().display(), "ledger writable again");
        }
        // Under the scan permit, so no scan commits meanwhile; a running
        // scan records the missed ones itself before it commits.
        if store.fault().is_none() && ledger.fault().is_none() && ledger.broken().is_none() && self.scans.try_start() {
            let recorded = self.record_scans();
            self.scans.finish();
            if let Err(e) = recorded {
                warn!(error = %e, "cannot record the committed scans yet");
            }
        }
        self.storage_faults()
    }

    /// Where the graph came from at start: `snapshot` or `graph store`.
    pub fn loaded_from(&self) -> &'static str {
        self.loaded_from
    }

    pub fn data_dir(&self) -> &Path {
        self.core.data_dir()
    }
    pub fn interner(&self) -> &Arc<Interner> {
        self.core.interner()
    }
    /// Shared read access to the live graph. Do not hold it across an await.
    pub fn graph(&self) -> RwLockReadGuard<'_, Graph> {
        self.core.graph()
    }
    pub(crate) fn graph_mut(&self) -> RwLockWriteGuard<'_, Graph> {
        self.core.graph_mut()
    }
    /// How many times the graph was taken for writing. Read while holding
    /// the guard of [`Engine::graph`], it names the state the guard shows:
    /// an answer worked out from that state holds while the count stays.
    pub fn graph_writes(&self) -> u64 {
        self.core.graph_writes()
    }
    pub fn store(&self) -> &GraphStore {
        self.core.store()
    }
    pub fn ledger(&self) -> &Arc<Ledger> {
        self.core.ledger()
    }
    /// Hands every later write transaction of `graph.redb` (scans,
    /// remediation, policies, signals, sources) to `shipper` before it
    /// commits; its error fails the write ([`crate::store::replica`]).
    /// `None` stops shipping.
    pub fn set_state_shipper(&self, shipper: Option<crate::store::replica::Shipper>) {
        self.store().set_shipper(shipper);
    }
    /// The seq of the last state record written or applied in `graph.redb`.
    pub fn state_seq(&self) -> Result<u64, EngineError> {
        Ok(self.store().state_seq()?)
    }
    /// How far back `graph.redb` keeps the graph's history
    /// (`graph.history_retention`; `None`: all of it). Applied after each
    /// commit and by [`Engine::prune_graph_history`].
    pub fn set_history_retention(&self, window: Option<std::time::Duration>) {
        self.core.set_history_retention(window);
    }
    /// Drops the graph history older than the retention window now, if one
    /// is set: what was removed, `None` without a window.
    pub fn prune_graph_history(&self) -> Result<Option<crate::store::graph_store::HistoryPruned>, EngineError> {
        Ok(self.core.prune_graph_history()?)
    }
    pub fn clock(&self) -> &Arc<dyn Clock> {
        self.core.clock()
    }
    pub fn now_us(&self) -> u64 {
        self.core.now_us()
    }
    pub fn session_id(&self) -> &str {
        self.core.session_id()
    }
    pub fn is_scanning(&self) -> bool {
        self.scans.is_scanning()
    }
    /// Scans finished in this data directory.
    /// The scan running now (its phase, per source what it sent so far),
    /// and how the last scan of this run ended.
    pub fn scan_progress(
        &self,
    ) -> (
        Option<crate::scan::progress::RunningView>,
        Option<crate::scan::progress::Finished>,
    ) {
        (self.scans.progress.running(), self.scans.progress.last())
    }

    pub fn scans_completed(&self) -> u64 {
        self.scans.completed()
    }
    pub fn last_commit_us(&self) -> u64 {
        self.scans.last_commit_us()
    }
    pub fn last_report(&self) -> Option<ScanReport> {
        self.scans.last_report()
    }

    /// Replaces the sources scanned from the next scan on.
    pub fn set_sources(&self, sources: Vec<Box<dyn Source>>) {
        self.sources.set_sources(sources);
    }

    /// Replaces the heuristic analyzers run from the next scan on.
    pub fn set_analyzers(&self, analyzers: Vec<Box<dyn Analyzer>>) {
        self.sources.set_analyzers(analyzers);
    }

    /// The findings of the last scan (empty before the first scan of this run).
    pub fn findings(&self) -> Arc<FindingSet> {
        self.findings.last()
    }

    /// The policy rules and what their last evaluation found.
    pub fn policies(&self) -> &crate::policy::Book {
        self.policy.book()
    }

    /// Runs `hook` as each scan starts, before the scan takes the sources,
    /// so the hook may replace them ([`Engine::set_sources`]): the daemon
    /// looks for plugins installed since the last scan.
    pub fn set_before_scan(&self, hook: BeforeScan) {
        self.sources.set_before_scan(hook);
    }

    /// Retired node rows a scan waits for before it compacts the graph,
    /// at least (beside an eighth of the rows; default
    /// [`crate::graph::COMPACT_MIN_ROWS`]).
    pub fn set_compaction_min_rows(&self, rows: usize) {
        self.core.set_compact_min_rows(rows);
    }

    /// What each source may take and send from the next scan on
    /// (`daemon.scan_timeout`, `daemon.scan_max_nodes`,
    /// `daemon.scan_max_edges`); a scan request's own timeout wins.
    pub fn set_scan_limits(&self, limits: ScanLimits) {
        self.sources.set_limits(limits);
    }

    /// Reads installed policy packs from `source` at every scan from now on.
    pub fn set_pack_source(&self, source: Arc<dyn crate::policy::PackSource>) {
        self.policy.set_pack_source(source);
    }

    /// Adds policy rules (all or none); `author` is recorded on each
    /// `POLICY_CHANGE` event.
    pub fn add_policies(
        &self,
        specs: &[crate::policy::RuleSpec],
        author: &str,
    ) -> Result<Vec<crate::policy::Rule>, crate::policy::PolicyError> {
        self.policy
            .book()
            .add(specs, author, self.now_us(), self.store(), self.ledger())
    }

    pub fn remove_policy(&self, id: &str, author: &str) -> Result<crate::policy::Rule, crate::policy::PolicyError> {
        self.policy.book().remove(id, author, self.store(), self.ledger())
    }

    pub fn toggle_policy(&self, id: &str, author: &str) -> Result<crate::policy::Rule, crate::policy::PolicyError> {
        self.policy.book().toggle(id, author, self.store(), self.ledger())
    }

    pub fn reorder_policies(
        &self,
        ids: &[String],
        author: &str,
    ) -> Result<Vec<crate::policy::Rule>, crate::policy::PolicyError> {
        self.policy.book().reorder(ids, author, self.store(), self.ledger())
    }

    /// The ids of the enforcing `block` rules that matched `id` in the last
    /// scan, in priority order: remediation keeps such a node at `sau_gate`.
    pub fn blocked_by(&self, id: crate::ids::NodeId) -> Vec<String> {
        self.policy.blocked_by(id)
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
            self.scans.commit(&self.core, rows, meta)?;
        }
        Ok(Some(report))
    }

    /// Sets (or clears) the locks a saga takes cluster-wide after its
    /// in-process one ([`svc_remediation::SharedLocks`]).
    pub fn set_shared_locks(&self, locks: Option<Arc<dyn svc_remediation::SharedLocks>>) {
        self.remediation.set_shared_locks(locks);
    }

    /// Switches formal verification on or off from the next scan on.
    pub fn set_oracle_enabled(&self, on: bool) {
        self.findings.set_oracle_enabled(on);
    }

    pub fn oracle_enabled(&self) -> bool {
        self.findings.oracle_enabled()
    }

    /// Reachability, proof paths and risk of the last scan. After a
    /// restart the proof paths of the loaded graph are computed on first
    /// use (the verdicts themselves are stored with the nodes).
    pub fn assessment(&self) -> Arc<Assessment> {
        if let Some(a) = self.findings.assessment() {
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
        self.findings.assessment_or(a)
    }

    /// What the ghost linker did in the last scan.
    pub fn links(&self) -> Arc<LinkReport> {
        self.findings.links()
    }

    /// What the pattern phase of the last scan found (empty before the
    /// first scan of this run).
    pub fn pattern(&self) -> Arc<PatternReport> {
        self.findings.pattern()
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
        self.sources.stop_all(wait)
    }

    /// Sets the scan configuration of one source (by its name).
    pub fn set_source_config(&self, source: &str, config: BTreeMap<String, String>) {
        self.sources.set_config(source, config);
    }

    /// Providers the configured sources serve, sorted.
    pub fn source_providers(&self) -> Vec<String> {
        let mut p: Vec<String> = self.sources.lock().iter().flat_map(|s| s.providers()).collect();
        p.sort();
        p.dedup();
        p
    }

    /// Names of the configured sources.
    pub fn source_names(&self) -> Vec<String> {
        self.sources.lock().iter().map(|s| s.name().to_owned()).collect()
    }

    /// Called after every finished scan, on the scanning thread.
    pub fn add_scan_listener(&self, f: ScanListener) {
        self.scans.add_listener(f);
    }

    /// Starts a scan unless one is running.
    pub fn try_start_scan(self: &Arc<Self>) -> Option<ScanPermit> {
        self.scans.try_start().then(|| ScanPermit { engine: self.clone() })
    }

    /// Which built-in rules the next scans run.
    pub fn set_rule_selection(&self, selection: crate::heuristics::builtin::Selection) {
        self.findings.set_rule_selection(selection);
    }

    pub fn rule_selection(&self) -> crate::heuristics::builtin::Selection {
        self.findings.rule_selection()
    }

    /// When the estate of the last committed scan was observed (Unix
    /// seconds; 0 before any scan).
    pub fn observed_s(&self) -> u64 {
        self.scans.observed_s()
    }

    /// The sources that have ever completed a scan of this graph (as kept
    /// in the graph store), by name; `None` when the store's record could
    /// not be read at start (and no scan of this run has completed), so
    /// which sources filled the graph is not known.
    pub fn sources_seen(&self) -> Option<Vec<String>> {
        self.sources.seen()
    }

    /// Each source that has completed a scan of this graph, with the
    /// providers its last successful scan declared or reported (as kept in
    /// the graph store); `None` when that is not known ([`Engine::sources_seen`]).
    pub fn sources_answered(&self) -> Option<BTreeMap<String, std::collections::BTreeSet<String>>> {
        self.sources.seen().map(|_| self.sources.answered())
    }

    /// Waits until the last commit's snapshot is on disk (or has failed).
    pub fn wait_snapshot(&self) {
        self.scans.wait_snapshot();
    }

    /// What the remediation pipeline works with.
    pub(crate) fn pipeline(&self) -> crate::remediation::ops::Pipeline<'_> {
        crate::remediation::ops::Pipeline {
            core: &self.core,
            sources: &self.sources,
            findings: &self.findings,
            policy: &self.policy,
            remediation: &self.remediation,
        }
    }
}

/// The graph as the last commit left it: from the snapshot when it matches
/// the store, else replayed from the store (and the snapshot written
/// again); retired rows compacted, adjacency rebuilt.
fn load_graph(
    store: &GraphStore,
    graph_path: &Path,
    snap_path: &Path,
    interner: &Arc<Interner>,
    key: SnapshotKey,
    meta: &crate::store::CommitMeta,
    clock: &dyn Clock,
) -> Result<(Graph, &'static str), EngineError> {
    let started = std::time::Instant::now();
    let content_commit_us = store.last_content_commit()?;
    let (mut graph, from) = match snapshot::read(snap_path, key, content_commit_us) {
        Ok(shards) => (
            Graph::from_shards(interner.clone(), shards.nodes, shards.edges, meta.generation),
            "snapshot",
        ),
        Err(e) => {
            if meta.scan_seq > 0 {
                warn!(error = %e, "snapshot not used; replaying the graph store");
            }
            let graph = replay(store, interner.clone(), meta.generation)?;
            if meta.scan_seq > 0
                && let Err(e) = snapshot::write(snap_path, &graph, key)
            {
                warn!(error = %e, "cannot write the snapshot; the next start replays the store again");
            }
            (graph, "graph store")
        }
    };
    let read_ms = started.elapsed().as_millis() as u64;
    // Retired rows are dropped from memory (graph.redb keeps their
    // history) before anything holds ids: all of them in a graph of up
    // to `START_COMPACT_ALL_ROWS` rows; in a larger one when a scan
    // would drop them (an eighth of the rows or more), so a start does
    // not copy every mapped shard to drop a few percent of the rows.
    let now_us = clock.now_us();
    let compact = graph.node_rows() <= crate::graph::START_COMPACT_ALL_ROWS
        || graph.compaction_due(now_us, crate::graph::COMPACT_MIN_ROWS);
    let compacted = if compact {
        graph.compact(now_us)
    } else {
        Default::default()
    };
    graph.rebuild_adjacency(now_us);
    if !compacted.is_empty() {
        info!(
            nodes_dropped = compacted.nodes_dropped,
            edges_dropped = compacted.edges_dropped,
            "retired rows compacted"
        );
    }
    info!(
        from,
        ms = started.elapsed().as_millis() as u64,
        read_ms,
        nodes = graph.node_rows(),
        edges = graph.edge_rows(),
        generation = meta.generation,
        path = %graph_path.display(),
        "graph loaded"
    );
    Ok((graph, from))
}

//! What the engine keeps of its scans: whether one runs, their sequence
//! and times, the last report, its listeners, and the commit.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use svc_graph::sync::{Mutex, RwLock};
use tracing::{debug, warn};

use super::report::ScanReport;
use crate::engine::{EngineError, SNAPSHOT_FILE};
use crate::graph::DirtyRows;
use crate::graph_core::{Core, Live};
use crate::ranks;
use crate::store::snapshot::{self, SnapshotKey};
use crate::store::{CommitMeta, GraphVersions};

pub(crate) type ScanListener = Box<dyn Fn(&ScanReport) + Send + Sync>;

/// Locks `persisted_symbols` (rank 25), `snapshot_writer` (45); `last_report`
/// and `listeners` are leaves.
pub(crate) struct ScanState {
    scanning: AtomicBool,
    scan_seq: AtomicU64,
    /// When the estate of the last committed scan was observed (Unix seconds, 0 unknown).
    observed_s: AtomicU64,
    last_commit_us: AtomicU64,
    last_report: RwLock<Option<ScanReport>>,
    listeners: RwLock<Vec<ScanListener>>,
    /// Interner entries already written to the store.
    persisted_symbols: Mutex<usize>,
    /// The snapshot being written behind the last commit, if any.
    snapshot_writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// A commit failed: the rows it held are in memory but not stored, so
    /// the next commit writes every row.
    resync: AtomicBool,
    /// A committed scan whose SCAN_COMPLETED could not be appended, kept
    /// until the ledger takes it ([`crate::Engine::record_scans`]).
    unannounced: Mutex<Option<ScanReport>>,
    /// The scan whose SCAN_COMPLETED is being appended (0: none).
    announcing: AtomicU64,
    /// What the running scan has done so far, and how the last one ended.
    pub(crate) progress: super::progress::Progress,
}

impl ScanState {
    /// As the graph store's metadata left it, with `persisted` symbols stored.
    pub(crate) fn new(meta: &CommitMeta, persisted: usize) -> ScanState {
        ScanState {
            scanning: AtomicBool::new(false),
            scan_seq: AtomicU64::new(meta.scan_seq),
            observed_s: AtomicU64::new(meta.observed_s),
            last_commit_us: AtomicU64::new(meta.commit_us),
            last_report: RwLock::new(ranks::LAST_REPORT, None),
            listeners: RwLock::new(ranks::LISTENERS, Vec::new()),
            persisted_symbols: Mutex::new(ranks::PERSISTED_SYMBOLS, persisted),
            snapshot_writer: Mutex::new(ranks::SNAPSHOT_WRITER, None),
            resync: AtomicBool::new(false),
            unannounced: Mutex::new(ranks::UNANNOUNCED, None),
            announcing: AtomicU64::new(0),
            progress: Default::default(),
        }
    }

    pub(crate) fn set_announcing(&self, scan_seq: u64) {
        self.announcing.store(scan_seq, Ordering::Release);
    }

    pub(crate) fn announcing(&self) -> u64 {
        self.announcing.load(Ordering::Acquire)
    }

    /// Keeps a committed scan's report whose SCAN_COMPLETED failed.
    pub(crate) fn keep_unannounced(&self, report: ScanReport) {
        *self.unannounced.lock() = Some(report);
    }

    /// The scan of the kept report, if one is kept.
    pub(crate) fn unannounced(&self) -> Option<u64> {
        self.unannounced.lock().as_ref().map(|r| r.scan_seq)
    }

    /// A copy of the kept report, when it is scan `scan_seq`'s.
    pub(crate) fn unannounced_report(&self, scan_seq: u64) -> Option<ScanReport> {
        self.unannounced
            .lock()
            .as_ref()
            .filter(|r| r.scan_seq == scan_seq)
            .cloned()
    }

    /// The kept report of scan `scan_seq`, taken; any other kept one is dropped.
    pub(crate) fn take_unannounced(&self, scan_seq: u64) -> Option<ScanReport> {
        self.unannounced.lock().take().filter(|r| r.scan_seq == scan_seq)
    }

    /// Marks a scan as running unless one is; whether it did.
    pub(crate) fn try_start(&self) -> bool {
        self.scanning
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub(crate) fn finish(&self) {
        self.scanning.store(false, Ordering::Release);
    }

    pub(crate) fn is_scanning(&self) -> bool {
        self.scanning.load(Ordering::Acquire)
    }

    /// Scans finished in this data directory.
    pub(crate) fn completed(&self) -> u64 {
        self.scan_seq.load(Ordering::Acquire)
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.scan_seq.load(Ordering::Acquire) + 1
    }

    pub(crate) fn last_commit_us(&self) -> u64 {
        self.last_commit_us.load(Ordering::Acquire)
    }

    pub(crate) fn observed_s(&self) -> u64 {
        self.observed_s.load(Ordering::Acquire)
    }

    pub(crate) fn last_report(&self) -> Option<ScanReport> {
        self.last_report.read().clone()
    }

    pub(crate) fn add_listener(&self, f: ScanListener) {
        self.listeners.write().push(f);
    }

    /// Keeps `report` as the last, then tells every listener.
    pub(crate) fn finished(&self, report: &ScanReport) {
        *self.last_report.write() = Some(report.clone());
        for l in self.listeners.read().iter() {
            l(report);
        }
    }

    /// Waits until the last commit's snapshot is on disk (or has failed).
    pub(crate) fn wait_snapshot(&self) {
        if let Some(handle) = self.snapshot_writer.lock().take() {
            let _ = handle.join();
        }
    }

    /// Writes the snapshot of the graph as the commit at `key` left it on
    /// a thread of its own, then syncs it and puts it in place; the caller
    /// waited for the snapshot before it ([`ScanState::wait_snapshot`]).
    /// The thread takes the graph's read lock itself, and writes nothing
    /// when the graph was written after the commit (`writes`, the count
    /// under the commit's lock): the next commit writes the snapshot then.
    fn write_snapshot_behind(&self, live: Arc<Live>, path: PathBuf, key: SnapshotKey, writes: u64) {
        let mut writer = self.snapshot_writer.lock();
        let spawned = std::thread::Builder::new().name("svc-snapshot".into()).spawn(move || {
            let t = std::time::Instant::now();
            let graph = live.read();
            if live.writes() != writes {
                debug!("the graph changed after its commit; the next commit writes the snapshot");
                return;
            }
            let written = match snapshot::write_unsynced(&path, &graph, key) {
                Ok(written) => written,
                Err(e) => {
                    warn!(error = %e, "cannot write the snapshot; the next start replays the graph store");
                    return;
                }
            };
            drop(graph);
            // The sections' buffers, freed on this thread, go back to the
            // kernel now rather than at the next scan's end, and before the
            // file is synced and put in place: once it is, the daemon is at
            // rest.
            crate::malloc::release();
            let write_ms = t.elapsed().as_millis() as u64;
            let bytes = written.bytes;
            match written.finish() {
                Ok(()) => debug!(bytes, write_ms, ms = t.elapsed().as_millis() as u64, "snapshot written"),
                Err(e) => warn!(error = %e, "cannot write the snapshot; the next start replays the graph store"),
            }
        });
        match spawned {
            Ok(handle) => *writer = Some(handle),
            Err(e) => warn!(error = %e, "cannot start the snapshot writer; the next start replays the graph store"),
        }
    }

    /// Writes new symbols and changed versions durably, then advances the
    /// scan sequence.
    pub(crate) fn commit(&self, core: &Core, rows: DirtyRows, meta: CommitMeta) -> Result<(), EngineError> {
        // The last commit's snapshot is in place (or failed) before this
        // commit, so an older snapshot never lands over a newer one. Waited
        // for before the graph's lock is taken: its writer takes it too.
        self.wait_snapshot();
        let mut persisted = self.persisted_symbols.lock();
        let fresh = core.interner().strings_from(*persisted);
        let graph = core.graph();
        let meta = CommitMeta {
            rows: (graph.node_rows() + graph.edge_rows()) as u64,
            ..meta
        };
        let t = std::time::Instant::now();
        // After a failed commit, rows changed then are not marked any more:
        // every row is written, which stores what memory holds.
        let resync = self.resync.swap(false, Ordering::AcqRel);
        let rows = if resync { graph.all_rows() } else { rows };
        let versions = GraphVersions { graph: &graph, rows };
        let all = || GraphVersions {
            graph: &graph,
            rows: graph.all_rows(),
        };
        let commit_us = match core.store().commit(*persisted, &fresh, &versions, all, meta) {
            Ok(us) => us,
            Err(e) => {
                self.resync.store(true, Ordering::Release);
                return Err(e.into());
            }
        };
        if resync {
            tracing::info!("every row stored again after an earlier commit failed");
        }
        let changed = !versions.rows.is_empty();
        drop(versions);
        let store_ms = t.elapsed().as_millis() as u64;
        let meta = CommitMeta { commit_us, ..meta };
        *persisted += fresh.len();
        if changed {
            // Behind the commit: the store is the truth, and a snapshot that
            // is late or fails to write only slows the next start.
            let key = SnapshotKey::new(&meta, *persisted);
            let path = core.data_dir().join(SNAPSHOT_FILE);
            self.write_snapshot_behind(core.live(), path, key, core.graph_writes());
        }
        debug!(store_ms, "committed");
        drop(graph);
        self.scan_seq.store(meta.scan_seq, Ordering::Release);
        self.observed_s.store(meta.observed_s, Ordering::Release);
        self.last_commit_us.store(meta.commit_us, Ordering::Release);
        drop(persisted);
        // The history before the retention window goes behind the commit;
        // a failure keeps it until the next commit or the periodic prune.
        if let Err(e) = core.prune_graph_history() {
            tracing::warn!(error = %e, "cannot drop the graph history before the retention window");
        }
        Ok(())
    }
}

//! The core every subsystem works with: the live graph, its interner, the
//! graph store, the ledger and the clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use svc_graph::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::clock::Clock;
use crate::graph::Graph;
use crate::intern::Interner;
use crate::store::graph_store::HistoryPruned;
use crate::store::ledger::Ledger;
use crate::store::{GraphStore, StoreError};

/// The graph (rank `graph`) and the handles that need no lock of their own.
pub(crate) struct Core {
    data_dir: PathBuf,
    interner: Arc<Interner>,
    live: Arc<Live>,
    store: GraphStore,
    ledger: Arc<Ledger>,
    clock: Arc<dyn Clock>,
    session_id: String,
    /// Retired node rows a compaction waits for, at least (beside an
    /// eighth of the rows): [`crate::graph::COMPACT_MIN_ROWS`].
    compact_min_rows: AtomicUsize,
    /// How far back `graph.redb` keeps history, in microseconds (0: all of it).
    history_retention_us: AtomicU64,
}

/// The graph's lock and how many times it was taken for writing, shared
/// with a thread that writes a snapshot of the graph behind a commit.
pub(crate) struct Live {
    graph: RwLock<Graph>,
    /// [`Live::writes`].
    writes: AtomicU64,
}

impl Live {
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Graph> {
        self.graph.read()
    }
    /// How many times the graph was taken for writing. Read while holding a
    /// [`Live::read`] guard, it names the state that guard shows: the same
    /// count later means nothing was written since.
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }
}

impl Core {
    pub(crate) fn new(
        data_dir: PathBuf,
        interner: Arc<Interner>,
        graph: RwLock<Graph>,
        store: GraphStore,
        ledger: Ledger,
        clock: Arc<dyn Clock>,
        session_id: String,
    ) -> Core {
        Core {
            data_dir,
            interner,
            live: Arc::new(Live {
                graph,
                writes: AtomicU64::new(0),
            }),
            store,
            ledger: Arc::new(ledger),
            clock,
            session_id,
            compact_min_rows: AtomicUsize::new(crate::graph::COMPACT_MIN_ROWS),
            history_retention_us: AtomicU64::new(0),
        }
    }

    pub(crate) fn data_dir(&self) -> &Path {
        &self.data_dir
    }
    pub(crate) fn interner(&self) -> &Arc<Interner> {
        &self.interner
    }
    pub(crate) fn graph(&self) -> RwLockReadGuard<'_, Graph> {
        self.live.read()
    }
    pub(crate) fn graph_mut(&self) -> RwLockWriteGuard<'_, Graph> {
        let graph = self.live.graph.write();
        // Counted under the lock: a reader holding the read lock sees the
        // count of the writes its graph shows.
        self.live.writes.fetch_add(1, Ordering::Release);
        graph
    }
    /// [`Live::writes`].
    pub(crate) fn graph_writes(&self) -> u64 {
        self.live.writes()
    }
    /// The graph's lock, for a thread of its own.
    pub(crate) fn live(&self) -> Arc<Live> {
        Arc::clone(&self.live)
    }
    pub(crate) fn store(&self) -> &GraphStore {
        &self.store
    }
    pub(crate) fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
    pub(crate) fn now_us(&self) -> u64 {
        self.clock.now_us()
    }
    /// How far back the graph's history is kept (`None`: all of it).
    pub(crate) fn set_history_retention(&self, window: Option<Duration>) {
        let us = window.map_or(0, |w| u64::try_from(w.as_micros()).unwrap_or(u64::MAX).max(1));
        self.history_retention_us.store(us, Ordering::Relaxed);
        self.store.set_max_checkpoint_age((us > 0).then_some(us));
    }
    /// Drops the graph history older than the retention window, if one is
    /// set (`None` when none is).
    pub(crate) fn prune_graph_history(&self) -> Result<Option<HistoryPruned>, StoreError> {
        let window = self.history_retention_us.load(Ordering::Relaxed);
        if window == 0 {
            return Ok(None);
        }
        let start = self.now_us().saturating_sub(window);
        self.store.prune_history(start).map(Some)
    }
    pub(crate) fn compact_min_rows(&self) -> usize {
        self.compact_min_rows.load(Ordering::Relaxed)
    }
    pub(crate) fn set_compact_min_rows(&self, rows: usize) {
        self.compact_min_rows.store(rows, Ordering::Relaxed);
    }
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }
}

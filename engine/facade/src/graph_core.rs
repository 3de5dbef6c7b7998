//! The core every subsystem works with: the live graph, its interner, the
//! graph store, the ledger and the clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use svc_graph::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::clock::Clock;
use crate::graph::Graph;
use crate::intern::Interner;
use crate::store::GraphStore;
use crate::store::ledger::Ledger;

/// The graph (rank `graph`) and the handles that need no lock of their own.
pub(crate) struct Core {
    data_dir: PathBuf,
    interner: Arc<Interner>,
    graph: RwLock<Graph>,
    store: GraphStore,
    ledger: Arc<Ledger>,
    clock: Arc<dyn Clock>,
    session_id: String,
    /// Retired node rows a compaction waits for, at least (beside an
    /// eighth of the rows): [`crate::graph::COMPACT_MIN_ROWS`].
    compact_min_rows: AtomicUsize,
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
            graph,
            store,
            ledger: Arc::new(ledger),
            clock,
            session_id,
            compact_min_rows: AtomicUsize::new(crate::graph::COMPACT_MIN_ROWS),
        }
    }

    pub(crate) fn data_dir(&self) -> &Path {
        &self.data_dir
    }
    pub(crate) fn interner(&self) -> &Arc<Interner> {
        &self.interner
    }
    pub(crate) fn graph(&self) -> RwLockReadGuard<'_, Graph> {
        self.graph.read()
    }
    pub(crate) fn graph_mut(&self) -> RwLockWriteGuard<'_, Graph> {
        self.graph.write()
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

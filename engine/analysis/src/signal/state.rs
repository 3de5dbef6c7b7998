//! The signal state the engine keeps between scans: the baseline the next
//! scan's node costs are compared with, the per-type history and the last
//! anomalies ([`Signal`]); one scan's analysis against them ([`Analysis`]),
//! made current once the scan is committed.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tracing::warn;

use super::history::History;
use super::pass;
use super::store::SignalStore;
use super::{Anomalies, Baseline, BaselineKind, HISTORY_SCANS, ScanTotals};
use crate::heuristics::FindingSet;
use svc_graph::graph::Graph;
use svc_graph::intern::Interner;
use svc_store::{GraphStore, StoreError};

/// One scan's analysis, installed once the scan is committed.
pub struct Analysis {
    pub anomalies: Anomalies,
    pub totals: ScanTotals,
    pub(super) baseline: Baseline,
}

/// The signal state the engine keeps between scans.
pub struct Signal {
    pub(super) baseline: Mutex<Option<Baseline>>,
    history: RwLock<Arc<History>>,
    latest: RwLock<Arc<Anomalies>>,
}

impl Signal {
    /// Loads the history and the last anomalies from the store; after a
    /// scanned start (`last_scan_seq` > 0) the graph as loaded becomes the
    /// baseline for the first scan.
    pub fn open(
        store: &GraphStore,
        interner: &Interner,
        graph: &Graph,
        last_scan_seq: u64,
        now_us: u64,
    ) -> Result<Signal, StoreError> {
        let history = History::from_scans(store.load_signal_history(interner)?);
        let latest = store.load_last_anomalies()?.unwrap_or_default();
        let baseline =
            (last_scan_seq > 0).then(|| Baseline::capture(graph, now_us, last_scan_seq, BaselineKind::Restart));
        Ok(Signal {
            baseline: Mutex::new(baseline),
            history: RwLock::new(Arc::new(history)),
            latest: RwLock::new(Arc::new(latest)),
        })
    }

    /// A state with nothing recorded (for tests and benches).
    pub fn empty() -> Signal {
        Signal {
            baseline: Mutex::new(None),
            history: RwLock::new(Arc::new(History::default())),
            latest: RwLock::new(Arc::new(Anomalies::default())),
        }
    }

    /// Renumbers the baseline's rows as [`Graph::compact`] renumbered the
    /// graph's: `kept[s]`, for a compacted shard, the old row of each new
    /// one ([`svc_graph::graph::Compaction::kept`]).
    pub fn compacted(&self, kept: &[Option<Vec<u32>>]) {
        if let Some(b) = self.baseline.lock().as_mut() {
            for (costs, kept) in b.costs.iter_mut().zip(kept) {
                if let Some(kept) = kept {
                    *costs = kept
                        .iter()
                        .map(|&r| costs.get(r as usize).copied().unwrap_or(f32::NAN))
                        .collect();
                }
            }
        }
    }

    /// The anomalies of the last analysed scan (kept across restarts).
    pub fn anomalies(&self) -> Arc<Anomalies> {
        self.latest.read().clone()
    }

    /// Per-type totals of the last [`HISTORY_SCANS`] scans.
    pub fn history(&self) -> Arc<History> {
        self.history.read().clone()
    }

    /// Scan `scan_seq`'s totals and anomalies against the baseline and the
    /// history; nothing changes until [`Signal::install`].
    pub fn analyze(&self, graph: &Graph, findings: &FindingSet, now_us: u64, scan_seq: u64) -> Analysis {
        let baseline = self.baseline.lock();
        let mut pass = pass::run(graph, findings, baseline.as_ref(), now_us);
        let totals = ScanTotals {
            scan_seq,
            at_us: now_us,
            types: pass
                .types
                .iter()
                .filter(|(_, a)| a.count > 0)
                .map(|(k, a)| (*k, a.totals()))
                .collect(),
        };
        let mut anomalies = pass::node_anomalies(graph, &mut pass, baseline.as_ref());
        anomalies.scan_seq = scan_seq;
        anomalies.types = self.history.read().type_anomalies(&totals, graph.interner());
        Analysis {
            anomalies,
            totals,
            baseline: Baseline {
                scan_seq,
                kind: BaselineKind::PreviousScan,
                costs: pass.costs,
            },
        }
    }

    /// Makes a committed scan's analysis current: written to the store (a
    /// failure is logged; the history then misses that scan), then in memory.
    pub fn install(&self, store: &GraphStore, interner: &Interner, analysis: Analysis) {
        let Analysis {
            anomalies,
            totals,
            baseline,
        } = analysis;
        if let Err(e) = store.put_signal(&totals, &anomalies, interner, HISTORY_SCANS) {
            warn!(error = %e, scan_seq = totals.scan_seq, "cannot store the cost history of this scan");
        }
        *self.baseline.lock() = Some(baseline);
        Arc::make_mut(&mut self.history.write()).push(totals);
        *self.latest.write() = Arc::new(anomalies);
    }
}

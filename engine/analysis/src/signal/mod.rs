//! The `engine.signal_analysis` phase's cost signals: per-type cost history
//! across scans and anomalies, found by a robust z-score of cost change.
//!
//! - Per node: each scan compares every node's cost with its cost at the
//!   previous scan, kept in memory as one `f32` per row ([`Baseline`]; rows
//!   never move, so a row index is the node). After a restart the baseline
//!   is the graph as loaded, which is the last committed scan's state, so the
//!   first scan compares with what was really there before.
//! - Per type: each scan's active count, total cost and waste per
//!   `(provider, type)` ([`ScanTotals`]), kept for the last
//!   [`HISTORY_SCANS`] scans in memory and in `graph.redb`
//!   ([`store`]).
//! - Anomalies: within each type, a node's cost change is scored against the
//!   changes of every node of that type compared in this scan (unchanged
//!   ones count as 0); a type's total change is scored against that type's
//!   history of changes. See [`robust`] and the thresholds below.
//! - Between scans: [`Signal`] keeps the baseline, the history and the last
//!   anomalies, and works out each scan's [`Analysis`] (the per-node pass,
//!   then the history's type anomalies), made current once it is committed.

mod history;
mod pass;
pub mod robust;
mod state;
pub mod store;

use svc_graph::graph::{Graph, visible};
use svc_graph::ids::Sym;

pub use history::{History, TypeSummary};
pub use state::{Analysis, Signal};
pub use store::SignalStore;

/// A cost change is an anomaly when its robust z-score exceeds this (in absolute value)...
pub const Z_THRESHOLD: f64 = 3.5;
/// ...and it is material: at least this many USD a month...
pub const MIN_CHANGE_USD_MO: f64 = 1.0;
/// ...and, for a node, at least this percentage of its previous cost (a
/// node that was not there or cost nothing passes)...
pub const MIN_CHANGE_PCT: f64 = 10.0;
/// ...or, for a type, at least this percentage of its previous total.
pub const TYPE_MIN_CHANGE_PCT: f64 = 1.0;
/// A type's total is scored only once its history holds this many changes
/// (with fewer, one change among flat ones cannot reach 3.5 anyway).
pub const TYPE_MIN_CHANGES: usize = 5;
/// Scans of per-type history kept, in memory and in `graph.redb`.
pub const HISTORY_SCANS: usize = 1000;
/// Node anomalies kept per scan, the highest |z| first (all are counted).
pub const MAX_NODE_ANOMALIES: usize = 10_000;

/// One resource type of one provider.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeKey {
    pub provider: Sym,
    pub ty: Sym,
}

/// One type at one scan.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TypeTotals {
    /// Active nodes.
    pub count: u64,
    /// Their summed monthly cost.
    pub cost_usd_mo: f64,
    /// What the deciding waste findings on them would save a month.
    pub waste_usd_mo: f64,
}

/// Every type at one scan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanTotals {
    pub scan_seq: u64,
    /// When the scan ran (µs).
    pub at_us: u64,
    pub types: std::collections::BTreeMap<TypeKey, TypeTotals>,
}

/// How a node's cost moved between two scans.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// There at both scans, at another cost.
    Changed,
    /// Not there (or not visible) at the previous scan.
    New,
    /// There at the previous scan, gone now (logically deleted).
    Removed,
}

impl ChangeKind {
    pub fn label(self) -> &'static str {
        match self {
            ChangeKind::Changed => "changed",
            ChangeKind::New => "new",
            ChangeKind::Removed => "removed",
        }
    }
    pub fn to_u8(self) -> u8 {
        match self {
            ChangeKind::Changed => 0,
            ChangeKind::New => 1,
            ChangeKind::Removed => 2,
        }
    }
    pub fn from_u8(v: u8) -> Option<ChangeKind> {
        Some(match v {
            0 => ChangeKind::Changed,
            1 => ChangeKind::New,
            2 => ChangeKind::Removed,
            _ => return None,
        })
    }
}

/// `up` or `down`.
pub fn direction(change: f64) -> &'static str {
    if change >= 0.0 { "up" } else { "down" }
}

/// Change relative to `previous`, in percent; `None` when there was nothing before.
pub fn change_pct(previous: f64, current: f64) -> Option<f64> {
    (previous != 0.0).then(|| (current - previous) / previous.abs() * 100.0)
}

/// A node whose cost changed unlike the others of its type.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeAnomaly {
    pub crn: String,
    pub ty: String,
    pub provider: String,
    pub kind: ChangeKind,
    /// Monthly cost at the previous scan (0 for a new node).
    pub previous: f64,
    /// Monthly cost now (0 for a removed node).
    pub current: f64,
    pub z: f64,
}

impl NodeAnomaly {
    pub fn change(&self) -> f64 {
        self.current - self.previous
    }
}

/// A type whose total cost changed unlike its history.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeAnomaly {
    pub ty: String,
    pub provider: String,
    pub previous: f64,
    pub current: f64,
    pub previous_count: u64,
    pub count: u64,
    pub z: f64,
    /// Changes in the history the score was taken against (this one included).
    pub history_changes: u64,
}

impl TypeAnomaly {
    pub fn change(&self) -> f64 {
        self.current - self.previous
    }
}

/// What the per-node comparison was made against.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum BaselineKind {
    /// Nothing: the first scan of a data directory compares no nodes.
    #[default]
    None,
    /// The previous scan of this run.
    PreviousScan,
    /// The graph as loaded at start (the last scan before the restart).
    Restart,
}

impl BaselineKind {
    pub fn label(self) -> &'static str {
        match self {
            BaselineKind::None => "none",
            BaselineKind::PreviousScan => "previous_scan",
            BaselineKind::Restart => "restart",
        }
    }
    pub fn to_u8(self) -> u8 {
        match self {
            BaselineKind::None => 0,
            BaselineKind::PreviousScan => 1,
            BaselineKind::Restart => 2,
        }
    }
    pub fn from_u8(v: u8) -> Option<BaselineKind> {
        Some(match v {
            0 => BaselineKind::None,
            1 => BaselineKind::PreviousScan,
            2 => BaselineKind::Restart,
            _ => return None,
        })
    }
}

/// The anomalies of one scan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Anomalies {
    /// The scan they belong to (0: no scan analysed yet).
    pub scan_seq: u64,
    /// The scan the node costs were compared with (0: none).
    pub previous_scan_seq: u64,
    pub baseline: BaselineKind,
    /// Nodes there at either scan, and those whose cost changed.
    pub nodes_compared: u64,
    pub nodes_changed: u64,
    /// Node anomalies found (all of them; `nodes` keeps the first [`MAX_NODE_ANOMALIES`]).
    pub nodes_flagged: u64,
    /// Highest |z| first.
    pub nodes: Vec<NodeAnomaly>,
    /// Highest |z| first.
    pub types: Vec<TypeAnomaly>,
}

/// Each row's cost at one scan, shard by shard; NaN where the row was not visible.
pub struct Baseline {
    pub scan_seq: u64,
    pub kind: BaselineKind,
    pub costs: Vec<Vec<f32>>,
}

impl Baseline {
    /// The costs the graph holds now (rows not visible at `now_us` are NaN).
    pub fn capture(graph: &Graph, now_us: u64, scan_seq: u64, kind: BaselineKind) -> Baseline {
        use rayon::prelude::*;
        let costs = graph
            .node_shards()
            .par_iter()
            .map(|s| {
                s.cost
                    .iter()
                    .zip(&s.valid_to)
                    .map(|(c, vt)| if visible(*vt, now_us) { *c } else { f32::NAN })
                    .collect()
            })
            .collect();
        Baseline { scan_seq, kind, costs }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.costs.iter().map(|c| c.capacity() * 4).sum()
    }
}

#[cfg(test)]
mod tests;

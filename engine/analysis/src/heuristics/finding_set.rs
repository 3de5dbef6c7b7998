//! A scan's findings grouped by node, each node's list in [`precedence`]
//! order ([`FindingSet`]), with how each analyzer and the built-in pass
//! did ([`BuiltinStats`]).

use rustc_hash::FxHashMap;

use super::analyzer::AnalyzerOutcome;
use super::builtin::ignore::Ignore;
use super::finding::{Finding, precedence};
use svc_graph::ids::NodeId;

/// The findings of the last scan, by node, and how each analyzer did.
#[derive(Clone, Debug, Default)]
pub struct FindingSet {
    pub scan_seq: u64,
    pub by_node: FxHashMap<NodeId, Vec<Finding>>,
    pub analyzers: Vec<AnalyzerOutcome>,
    /// Nodes the `svc:ignore` tag kept out; none of their findings count.
    pub ignored: FxHashMap<NodeId, Ignore>,
    /// How the built-in rules did.
    pub builtin: BuiltinStats,
    /// When the estate was observed (Unix seconds).
    pub as_of_s: u64,
}

/// The built-in pass in numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuiltinStats {
    pub rules: u64,
    /// Nodes of a type some rule reads whose answer was worked out in this
    /// scan, and rule checks run on them.
    pub evaluated: u64,
    pub checks: u64,
    /// Nodes whose answer from the scan before stood (nothing it read changed).
    pub kept: u64,
    pub findings: u64,
    pub ignored: u64,
    pub duration_ms: u64,
}

impl BuiltinStats {
    /// The numbers as they appear in `SCAN_COMPLETED` and the heuristics status.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "rules": self.rules, "evaluated": self.evaluated, "checks": self.checks, "kept": self.kept,
            "findings": self.findings, "ignored": self.ignored, "duration_ms": self.duration_ms,
        })
    }
}

impl FindingSet {
    pub fn new(scan_seq: u64, findings: Vec<Finding>, analyzers: Vec<AnalyzerOutcome>) -> FindingSet {
        FindingSet::grouped(scan_seq, Vec::new(), findings, analyzers)
    }

    /// A set from findings grouped by node (each node once) and more
    /// findings to add to them; every node's list is put in precedence order.
    pub fn grouped(
        scan_seq: u64,
        mut grouped: Vec<(NodeId, Vec<Finding>)>,
        more: Vec<Finding>,
        analyzers: Vec<AnalyzerOutcome>,
    ) -> FindingSet {
        use rayon::prelude::*;
        grouped.par_iter_mut().for_each(|(_, list)| list.sort_by(precedence));
        let mut by_node: FxHashMap<NodeId, Vec<Finding>> = FxHashMap::default();
        by_node.reserve(grouped.len() + more.len());
        by_node.extend(grouped);
        let mut added: Vec<NodeId> = more.iter().map(|f| f.node).collect();
        for f in more {
            by_node.entry(f.node).or_default().push(f);
        }
        added.sort_unstable();
        added.dedup();
        for id in added {
            if let Some(list) = by_node.get_mut(&id) {
                list.sort_by(precedence);
            }
        }
        FindingSet {
            scan_seq,
            by_node,
            analyzers,
            ..FindingSet::default()
        }
    }

    /// Findings about `node`, the deciding one first.
    pub fn of(&self, node: NodeId) -> &[Finding] {
        self.by_node.get(&node).map_or(&[], Vec::as_slice)
    }

    /// The finding that decides a node's verdict: its first, unless the
    /// node is ignored.
    pub fn deciding(&self, node: NodeId) -> Option<&Finding> {
        if self.ignored.contains_key(&node) {
            return None;
        }
        self.of(node).first()
    }

    /// Monthly USD of the resources judged waste, and what acting on every
    /// deciding finding would save (one finding per node, so nothing is
    /// counted twice).
    pub fn totals(&self) -> (f64, f64) {
        let (mut waste, mut savings) = (0.0, 0.0);
        for id in self.by_node.keys() {
            if let Some(f) = self.deciding(*id) {
                savings += f.projected_savings_usd_mo;
                if f.is_waste {
                    waste += f.projected_savings_usd_mo;
                }
            }
        }
        (waste, savings)
    }

    /// Number of findings.
    pub fn len(&self) -> usize {
        self.by_node.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}

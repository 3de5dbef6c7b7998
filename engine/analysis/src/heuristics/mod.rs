//! The `engine.heuristics` phase: findings about which resources are waste,
//! from the engine's own rules and from heuristic plugins (SPEC 2.6, 4.7),
//! joined into each node's verdict.
//!
//! - [`analyzer`]: the [`Analyzer`] seam a heuristic plugin implements (the
//!   plugin host in `svc-ingest` does, over gRPC), and the pass that feeds it
//!   the declared node types and properties in batches and checks what comes
//!   back.
//! - [`join`]: findings to verdicts: `is_waste`, `waste_reason`, the rule
//!   that named it, and the finding's risk.

pub mod analyzer;
pub mod builtin;
pub mod join;

use rustc_hash::FxHashMap;
use std::borrow::Cow;

use svc_graph::ids::NodeId;

pub use analyzer::{
    AnalyzeBatch, AnalyzeNode, Analyzer, AnalyzerOutcome, AnalyzerSpec, DEFAULT_BATCH_SIZE, FINDINGS_SLACK,
    MAX_BATCH_BYTES, MAX_BATCH_SIZE, MAX_FINDINGS_PER_NODE, MAX_PLUGIN_RISK, PluginFinding,
};

/// Where a finding came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingSource {
    /// A rule built into the engine.
    Builtin,
    /// A heuristic plugin, by its plugin name (`svc-plugin-<name>`).
    Plugin(String),
    /// An enforcing `flag` policy rule (its finding's rule is `policy:<id>`).
    /// Ordered last: at equal risk a heuristic decides before a policy.
    Policy,
}

impl FindingSource {
    /// `builtin`, or `plugin:<name>`.
    pub fn label(&self) -> String {
        match self {
            FindingSource::Builtin => "builtin".to_owned(),
            FindingSource::Plugin(name) => format!("plugin:{name}"),
            FindingSource::Policy => "policy".to_owned(),
        }
    }
}

/// One verdict about one node, checked and normalised.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub node: NodeId,
    pub source: FindingSource,
    /// Name of the rule (a plugin's `MetadataResponse.name`).
    pub rule: Cow<'static, str>,
    pub is_waste: bool,
    /// 0..=100 for built-in rules, 0..=79 for plugins.
    pub risk_score: u8,
    pub reason: String,
    pub suggested_action: Cow<'static, str>,
    pub projected_savings_usd_mo: f64,
    pub annotations: Vec<(String, String)>,
}

/// The findings of the last scan, by node, and how each analyzer did.
#[derive(Clone, Debug, Default)]
pub struct FindingSet {
    pub scan_seq: u64,
    pub by_node: FxHashMap<NodeId, Vec<Finding>>,
    pub analyzers: Vec<AnalyzerOutcome>,
    /// Nodes the `svc:ignore` tag kept out; none of their findings count.
    pub ignored: FxHashMap<NodeId, builtin::ignore::Ignore>,
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
        grouped
            .par_iter_mut()
            .for_each(|(_, list)| list.sort_by(join::precedence));
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
                list.sort_by(join::precedence);
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

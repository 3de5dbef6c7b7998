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
pub mod join;

use std::collections::HashMap;

use crate::ids::NodeId;

pub use analyzer::{
    AnalyzeBatch, AnalyzeNode, Analyzer, AnalyzerOutcome, AnalyzerSpec, DEFAULT_BATCH_SIZE, MAX_BATCH_BYTES,
    MAX_BATCH_SIZE, MAX_PLUGIN_RISK, PluginFinding,
};

/// Where a finding came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingSource {
    /// A rule built into the engine.
    Builtin,
    /// A heuristic plugin, by its plugin name (`svc-plugin-<name>`).
    Plugin(String),
}

impl FindingSource {
    /// `builtin`, or `plugin:<name>`.
    pub fn label(&self) -> String {
        match self {
            FindingSource::Builtin => "builtin".to_owned(),
            FindingSource::Plugin(name) => format!("plugin:{name}"),
        }
    }
}

/// One verdict about one node, checked and normalised.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub node: NodeId,
    pub source: FindingSource,
    /// Name of the rule (a plugin's `MetadataResponse.name`).
    pub rule: String,
    pub is_waste: bool,
    /// 0..=100 for built-in rules, 0..=79 for plugins.
    pub risk_score: u8,
    pub reason: String,
    pub suggested_action: String,
    pub projected_savings_usd_mo: f64,
    pub annotations: Vec<(String, String)>,
}

/// The findings of the last scan, by node, and how each analyzer did.
#[derive(Clone, Debug, Default)]
pub struct FindingSet {
    pub scan_seq: u64,
    pub by_node: HashMap<NodeId, Vec<Finding>>,
    pub analyzers: Vec<AnalyzerOutcome>,
}

impl FindingSet {
    pub fn new(scan_seq: u64, findings: Vec<Finding>, analyzers: Vec<AnalyzerOutcome>) -> FindingSet {
        let mut by_node: HashMap<NodeId, Vec<Finding>> = HashMap::new();
        for f in findings {
            by_node.entry(f.node).or_default().push(f);
        }
        for list in by_node.values_mut() {
            list.sort_by(join::precedence);
        }
        FindingSet {
            scan_seq,
            by_node,
            analyzers,
        }
    }

    /// Findings about `node`, the deciding one first.
    pub fn of(&self, node: NodeId) -> &[Finding] {
        self.by_node.get(&node).map_or(&[], Vec::as_slice)
    }

    /// Number of findings.
    pub fn len(&self) -> usize {
        self.by_node.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}

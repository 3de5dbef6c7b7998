//! The `engine.heuristics` phase: findings about which resources are waste,
//! from the engine's own rules and from heuristic plugins (SPEC 2.6, 4.7),
//! joined into each node's verdict.
//!
//! - [`analyzer`]: the [`Analyzer`] seam a heuristic plugin implements (the
//!   plugin host in `svc-ingest` does, over gRPC), and the pass that feeds it
//!   the declared node types and properties in batches and checks what comes
//!   back.
//! - [`Finding`]: one rule's, plugin's or policy's verdict about one node;
//!   [`FindingSet`]: a scan's findings by node, the deciding one first.
//! - [`builtin`]: the engine's own rules.
//! - [`join`]: findings to verdicts: `is_waste`, `waste_reason`, the rule
//!   that named it, and the finding's risk.

pub mod analyzer;
pub mod builtin;
mod finding;
mod finding_set;
pub mod join;

pub use analyzer::{
    AnalyzeBatch, AnalyzeNode, Analyzer, AnalyzerOutcome, AnalyzerSpec, DEFAULT_BATCH_SIZE, FINDINGS_SLACK,
    MAX_BATCH_BYTES, MAX_BATCH_SIZE, MAX_FINDINGS_PER_NODE, MAX_PLUGIN_RISK, PluginFinding,
};
pub use finding::{Finding, FindingSource};
pub use finding_set::{BuiltinStats, FindingList, FindingSet};

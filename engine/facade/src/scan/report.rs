//! What a scan reports: per source, per phase and in total, and the span
//! names of the pipeline.

use crate::analysis::linker::LinkReport;
use crate::graph::{EdgeBatch, IngestStats, NodeBatch};
use crate::heuristics::{AnalyzerOutcome, BuiltinStats};
use crate::store::ledger::events::{
    LinkerSummary, PhaseTime, ReachabilitySummary, RemediationSummary, ScanCompleted, ScanSource, UnlistedScope,
};
use svc_graph::source::{ScanSink, Unlisted};

/// Span names of the pipeline, declared once.
pub mod spans {
    pub const RUN: &str = "engine.run";
    pub const INIT: &str = "engine.init";
    pub const TIME_TRAVEL: &str = "engine.time_travel";
    pub const PLUGIN_SCAN: &str = "engine.plugin_scan";
    pub const HEURISTICS: &str = "engine.heuristics";
    pub const PATTERN: &str = "engine.pattern";
    pub const GHOST_LINKER: &str = "engine.ghost_linker";
    pub const FORMAL_VERIFY: &str = "engine.formal_verify";
    pub const SAU: &str = "engine.sau";
    pub const POLICY: &str = "engine.policy";
    pub const SIGNAL_ANALYSIS: &str = "engine.signal_analysis";
    /// The ten phases, in order.
    pub const PHASES: [&str; 10] = [
        INIT,
        TIME_TRAVEL,
        PLUGIN_SCAN,
        HEURISTICS,
        PATTERN,
        GHOST_LINKER,
        FORMAL_VERIFY,
        SAU,
        POLICY,
        SIGNAL_ANALYSIS,
    ];
}

/// How one source's scan went.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceOutcome {
    pub name: String,
    pub providers: Vec<String>,
    pub ok: bool,
    pub error: Option<String>,
    pub nodes: u64,
    pub edges: u64,
    /// Nodes and edges dropped as malformed (bad CRN, invalid properties, ...).
    pub rejected: u64,
    /// The first reasons for those rejections.
    pub rejections: Vec<String>,
    pub duration_ms: u64,
    /// When the source observed its estate, if not now (a simulated estate).
    pub observed_at: Option<u64>,
    /// What a scan that succeeded could not list (kept as it was).
    pub unlisted: Vec<Unlisted>,
}

/// The result of a finished scan (also the payload of SCAN_COMPLETED).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanReport {
    pub scan_seq: u64,
    pub started_us: u64,
    pub duration_ms: u64,
    /// Graph generation after the commit.
    pub generation: u64,
    /// Commit time of the previous scan (the pinned time-travel point), 0 for the first.
    pub previous_scan_us: u64,
    pub nodes: u64,
    pub edges: u64,
    pub logically_deleted: u64,
    pub waste: u64,
    pub cost_usd_mo: f64,
    pub waste_usd_mo: f64,
    pub projected_savings_usd_mo: f64,
    pub nodes_ingest: IngestStats,
    pub edges_ingest: IngestStats,
    pub retired_nodes: u64,
    pub retired_edges: u64,
    pub versions_written: u64,
    pub sources: Vec<SourceOutcome>,
    /// How each heuristic plugin did.
    pub heuristics: Vec<AnalyzerOutcome>,
    /// How the built-in rules did.
    pub builtin: BuiltinStats,
    /// When the estate was observed (Unix seconds): now, unless a source
    /// simulates its clock.
    pub observed_at: u64,
    /// Findings kept in the heuristics phase, and nodes whose verdict changed.
    pub findings: u64,
    pub verdicts_changed: u64,
    /// Active nodes per provider.
    pub providers: Vec<(String, u64)>,
    /// Nodes reported in this scan per provider.
    pub discovered: Vec<(String, u64)>,
    /// What the ghost linker matched and added.
    pub links: LinkReport,
    /// Nodes reachable, unreachable and unknown after formal verification.
    pub reachability: [u64; 3],
    /// Nodes whose reachability or removal risk changed in this scan.
    pub assessments_changed: u64,
    /// Ledger sequence of the SCAN_COMPLETED event.
    pub event_seq: u64,
    /// The pattern phase in numbers (groups, outliers, grouped findings).
    pub pattern: serde_json::Value,
    /// What the remediation pipeline did in `engine.sau`.
    pub sau: Option<crate::remediation::ops::SauReport>,
    /// What the policy rules did.
    pub policy: crate::policy::PolicyReport,
    /// Each phase's span name and wall time (ms), in the order they ran.
    pub phases: Vec<(&'static str, u64)>,
    /// Wall time of the durable commit (ms).
    pub commit_ms: u64,
}

impl ScanReport {
    /// The SCAN_COMPLETED payload.
    pub fn payload(&self) -> ScanCompleted {
        ScanCompleted {
            scan_seq: self.scan_seq,
            generation: self.generation,
            duration_ms: self.duration_ms,
            node_count: self.nodes,
            edge_count: self.edges,
            waste_count: self.waste,
            logically_deleted: self.logically_deleted,
            cost_usd_mo: round2(self.cost_usd_mo),
            waste_usd_mo: round2(self.waste_usd_mo),
            projected_savings_usd_mo: round2(self.projected_savings_usd_mo),
            savings_usd: round2(self.projected_savings_usd_mo),
            nodes_added: (self.nodes_ingest.inserted + self.nodes_ingest.revived) as u64,
            nodes_changed: self.nodes_ingest.changed as u64,
            nodes_unchanged: self.nodes_ingest.unchanged as u64,
            nodes_deleted: self.retired_nodes,
            edges_added: (self.edges_ingest.inserted + self.edges_ingest.revived) as u64,
            edges_deleted: self.retired_edges,
            edges_dangling: self.edges_ingest.dangling as u64,
            versions_written: self.versions_written,
            providers: self.providers.iter().cloned().collect(),
            sources: self
                .sources
                .iter()
                .map(|s| ScanSource {
                    name: s.name.clone(),
                    providers: s.providers.clone(),
                    ok: s.ok,
                    error: s.error.clone(),
                    nodes: s.nodes,
                    edges: s.edges,
                    duration_ms: s.duration_ms,
                    rejected: s.rejected,
                    rejections: s.rejections.clone(),
                    unlisted: s
                        .unlisted
                        .iter()
                        .map(|u| UnlistedScope {
                            provider: u.provider.clone(),
                            account: u.account.clone(),
                            region: u.region.clone(),
                            service: u.service.clone(),
                            error: u.error.clone(),
                        })
                        .collect(),
                })
                .collect(),
            heuristics: self.heuristics.iter().map(AnalyzerOutcome::payload).collect(),
            builtin: self.builtin.payload(),
            observed_at: self.observed_at,
            findings: self.findings,
            verdicts_changed: self.verdicts_changed,
            ghost_linker: LinkerSummary {
                matched: self.links.matched(),
                added: self.links.added,
                retired: self.links.retired,
                expired_flows: self.links.expired_flows,
            },
            assessments_changed: self.assessments_changed,
            reachability: ReachabilitySummary {
                reachable: self.reachability[0],
                unreachable: self.reachability[1],
                unknown: self.reachability[2],
            },
            pattern: self.pattern.clone(),
            remediation: self.sau.as_ref().map(|s| RemediationSummary {
                stages: s.stages.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
                entered: s.entered,
                left: s.left,
                left_reasons: s.left_reasons.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
                analyzed: s.analyzed,
                written: s.written,
                held: s.held,
                expired_isolations: s.expired_isolations,
                recovered_sagas: s.recovered_sagas,
            }),
            policy: self.policy.payload(),
            phases: self
                .phases
                .iter()
                .map(|&(name, duration_ms)| PhaseTime {
                    name: name.to_owned(),
                    duration_ms,
                })
                .collect(),
            commit_ms: self.commit_ms,
        }
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A sink that keeps every batch it receives, with running counts.
#[derive(Default)]
pub struct CollectSink {
    pub nodes: Vec<NodeBatch>,
    pub edges: Vec<EdgeBatch>,
    pub node_count: u64,
    pub edge_count: u64,
}

impl ScanSink for CollectSink {
    fn nodes(&mut self, batch: NodeBatch) {
        self.node_count += batch.nodes() as u64;
        self.nodes.push(batch);
    }
    fn edges(&mut self, batch: EdgeBatch) {
        self.edge_count += batch.len() as u64;
        self.edges.push(batch);
    }
}

//! JSON the engine writes and the API passes on unchanged: the scan report
//! (the `SCAN_COMPLETED` payload, also the answer of a waited-for scan),
//! the built-in rules' and heuristic plugins' figures. The engine owns
//! these shapes; the types here describe them for the OpenAPI document, and
//! the tests read real payloads into them (no field more or less).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::{RefOr, SchemaFormat};
use utoipa::{PartialSchema, ToSchema};

/// The result of a finished scan; also the payload of the `SCAN_COMPLETED` ledger event.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanReport {
    /// Nodes whose reachability or removal risk changed in this scan.
    pub assessments_changed: u64,
    pub builtin: BuiltinStats,
    /// Wall time of the durable commit after the phases (absent from scans recorded before it was).
    #[serde(default)]
    pub commit_ms: u64,
    pub cost_usd_mo: f64,
    pub duration_ms: u64,
    pub edge_count: u64,
    pub edges_added: u64,
    /// Reported edges whose source or target is not in the graph.
    pub edges_dangling: u64,
    pub edges_deleted: u64,
    /// Heuristic findings kept in this scan.
    pub findings: u64,
    /// Graph generation after the commit.
    pub generation: u64,
    pub ghost_linker: ScanLinks,
    pub heuristics: Vec<HeuristicOutcome>,
    pub logically_deleted: u64,
    pub node_count: u64,
    pub nodes_added: u64,
    pub nodes_changed: u64,
    pub nodes_deleted: u64,
    pub nodes_unchanged: u64,
    /// When the estate was observed (Unix seconds); the wall clock unless a source simulates its
    /// own.
    pub observed_at: u64,
    pub pattern: PatternCounts,
    /// The ten phases in SPEC order with their wall times (empty for scans recorded before they
    /// were).
    #[serde(default)]
    pub phases: Vec<PhaseTime>,
    #[serde(default)]
    #[schema(nullable = false)]
    pub policy: Option<PolicyScanCounts>,
    pub projected_savings_usd_mo: f64,
    /// Active nodes per provider.
    pub providers: BTreeMap<String, u64>,
    pub reachability: ReachabilityCounts,
    /// What `engine.sau` did; null when it did not run.
    #[serde(default)]
    pub remediation: Option<SauCounts>,
    pub savings_usd: f64,
    #[schema(minimum = 1)]
    pub scan_seq: u64,
    pub sources: Vec<SourceOutcome>,
    /// Nodes whose verdict (waste, reason, rule) changed in this scan.
    pub verdicts_changed: u64,
    pub versions_written: u64,
    pub waste_count: u64,
    pub waste_usd_mo: f64,
}

/// One phase of a scan: its span name (`engine.init` .. `engine.signal_analysis`) and wall time.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseTime {
    pub name: String,
    pub duration_ms: u64,
}

/// A `ScanReport` plus `status`, `cycle` and `event_seq`.
pub struct ScanCompleted;

impl PartialSchema for ScanCompleted {
    fn schema() -> RefOr<Schema> {
        let RefOr::T(Schema::Object(report)) = ScanReport::schema() else {
            return ScanReport::schema();
        };
        let text = |values: &[&str]| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(values.iter().copied()))
        };
        let mut completed: Object = report;
        completed.description = Some("A `ScanReport` plus `status`, `cycle` and `event_seq`.".into());
        completed
            .properties
            .insert("cycle".into(), text(&["scan", "sync"]).into());
        completed.properties.insert(
            "event_seq".into(),
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Int64)))
                .minimum(Some(1))
                .description(Some("Ledger sequence of the `SCAN_COMPLETED` event."))
                .into(),
        );
        completed
            .properties
            .insert("status".into(), text(&["completed"]).into());
        completed
            .required
            .extend(["cycle", "event_seq", "status"].map(String::from));
        completed.required.sort();
        RefOr::T(Schema::Object(completed))
    }
}

impl ToSchema for ScanCompleted {}

/// How one source did in a scan.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceOutcome {
    pub duration_ms: u64,
    pub edges: u64,
    /// Why the source failed; null when it did not.
    #[schema(required = true)]
    pub error: Option<String>,
    pub name: String,
    pub nodes: u64,
    pub ok: bool,
    pub providers: Vec<String>,
    /// Nodes and edges dropped as malformed (bad CRN, invalid JSON properties, NaN cost).
    pub rejected: u64,
    /// The first reasons for those rejections.
    pub rejections: Vec<String>,
    /// The parts of its estate the source could not list while the rest of its scan succeeded; nothing there was retired.
    pub unlisted: Vec<UnlistedScope>,
}

/// A part of a source's estate its scan could not list (a region, a service of a region, an account); a null field spans every value.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlistedScope {
    #[schema(required = true)]
    pub account: Option<String>,
    /// Why it could not be listed.
    pub error: String,
    /// CRN provider segment; null: every provider the source reports.
    #[schema(required = true)]
    pub provider: Option<String>,
    #[schema(required = true)]
    pub region: Option<String>,
    /// CRN service segment (`rds`, `ec2`, ...).
    #[schema(required = true)]
    pub service: Option<String>,
}

/// How one heuristic plugin did in the `engine.heuristics` phase.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeuristicOutcome {
    pub batches_sent: u64,
    /// Findings whose risk score above 79 was capped at 79.
    pub capped: u64,
    /// When the plugin failed, findings of its last good scan kept for resources still present.
    pub carried_over: u64,
    pub discard_reasons: Vec<String>,
    /// Findings about resources that were not sent to the plugin.
    pub discarded: u64,
    pub duration_ms: u64,
    /// Why the plugin failed; null when it did not. A failed plugin's findings are dropped.
    #[schema(required = true)]
    pub error: Option<String>,
    /// Findings kept (one per resource).
    pub findings: u64,
    /// Plugin name (`svc-plugin-<name>`).
    pub name: String,
    pub nodes_sent: u64,
    pub ok: bool,
    /// The name the plugin declared in `Metadata`.
    pub rule: String,
    pub version: String,
    pub waste: u64,
}

/// What the ghost linker matched, added and retired, and traffic edges expired.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanLinks {
    pub added: u64,
    pub expired_flows: u64,
    pub matched: u64,
    pub retired: u64,
}

/// Active nodes by reachability.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReachabilityCounts {
    pub reachable: u64,
    pub unknown: u64,
    pub unreachable: u64,
}

/// The `engine.pattern` phase of one scan in numbers.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternCounts {
    pub duration_ms: u64,
    /// Groups whose waste members, all decided by one rule, make one grouped finding.
    pub grouped: u64,
    /// Groups of alike resources (same structural signature, at least 3 members).
    pub groups: u64,
    /// Members whose verdict differs from at least 80% of their group.
    pub outliers: u64,
}

/// How the built-in rules did in one scan.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BuiltinStats {
    /// Rule conditions evaluated.
    pub checks: u64,
    pub duration_ms: u64,
    /// Nodes of a type some rule reads whose answer was worked out in this scan (every such node
    /// in a first scan; in a later scan only those whose row, edges, read neighbours, asked-about
    /// estate facts or time bounds changed).
    pub evaluated: u64,
    pub findings: u64,
    /// Nodes kept out by their `svc:ignore` tag.
    pub ignored: u64,
    /// Nodes whose answer from the scan before stood, because nothing it read changed.
    pub kept: u64,
    pub rules: u64,
}

/// What the policy phase did in a scan.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyScanCounts {
    /// Nodes an enforcing block rule keeps out of remediation.
    pub blocked: u64,
    pub duration_ms: u64,
    pub errors: u64,
    /// Rules evaluated as column predicates.
    pub fast_rules: u64,
    /// Nodes an enforcing flag rule marked as waste.
    pub flagged: u64,
    pub matches: u64,
    pub nodes: u64,
    /// Pack rules added, changed or removed as the scan started.
    pub pack_changes: u64,
    pub rules: u64,
    pub verdicts_changed: u64,
}

/// What `engine.sau` did in one scan.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SauCounts {
    pub analyzed: u64,
    pub entered: u64,
    pub expired_isolations: u64,
    pub held: u64,
    pub left: u64,
    /// Items that left the pipeline, by reason (those someone decided on also get a
    /// PIPELINE_MOVE event).
    pub left_reasons: BTreeMap<String, u64>,
    pub recovered_sagas: u64,
    pub stages: BTreeMap<String, u64>,
    /// Items stored because they changed in this pass.
    pub written: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_payloads_read_into_their_types() {
        let dir = tempfile::tempdir().unwrap();
        let clock = std::sync::Arc::new(svc_engine::clock::ManualClock::new(1_700_000_000_000_000));
        let engine = std::sync::Arc::new(svc_engine::Engine::open(dir.path(), "test", clock).unwrap());
        let report = serde_json::to_value(engine.try_start_scan().unwrap().run().unwrap().payload()).unwrap();
        let typed: ScanReport = serde_json::from_value(report.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap()["scan_seq"], report["scan_seq"]);
        let outcome = svc_engine::heuristics::AnalyzerOutcome::default().payload();
        serde_json::from_value::<HeuristicOutcome>(outcome).unwrap();
        let builtin = svc_engine::heuristics::BuiltinStats::default().payload();
        serde_json::from_value::<BuiltinStats>(builtin).unwrap();
    }

    #[test]
    fn a_completed_scan_is_a_report_and_three_fields() {
        let RefOr::T(Schema::Object(o)) = ScanCompleted::schema() else {
            panic!("not an object schema")
        };
        for name in ["cycle", "event_seq", "status", "scan_seq"] {
            assert!(
                o.properties.contains_key(name) && o.required.iter().any(|r| r == name),
                "{name}"
            );
        }
    }
}

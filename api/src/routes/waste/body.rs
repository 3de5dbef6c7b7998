//! Response bodies of the waste ledger and the heuristics status. Fields
//! are declared in the order they are written: by name.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::wire::{Crn, listed_str};

/// Totals of the waste ledger.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WasteTotals {
    pub flagged: u64,
    /// What acting on every deciding finding saves a month (waste plus cheaper shapes).
    pub projected_savings_usd_mo: f64,
    /// What the resources judged waste cost a month.
    pub waste_usd_mo: f64,
}

/// `GET /api/v1/waste-ledger`: per resource type, count, monthly waste,
/// projected savings and top resources.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WasteLedger {
    /// When that scan observed the estate, Unix seconds.
    pub observed_at: u64,
    /// Version of the embedded price table.
    pub price_table: &'static str,
    /// The scan whose findings these are (0 before the first).
    pub scan_seq: u64,
    #[schema(inline)]
    pub totals: WasteTotals,
    pub types: Vec<WasteLedgerType>,
}

/// One resource type's line in the waste ledger.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WasteLedgerType {
    /// Active resources of the type.
    pub count: u64,
    /// Resources in use with a cheaper shape suggested.
    pub optimize_count: u64,
    pub projected_savings_usd_mo: f64,
    pub provider: String,
    pub top: Vec<WasteResource>,
    #[serde(rename = "type")]
    pub ty: String,
    pub waste_count: u64,
    pub waste_usd_mo: f64,
}

/// A resource and the finding that decides its verdict.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WasteResource {
    pub crn: Crn,
    pub is_waste: bool,
    pub projected_savings_usd_mo: f64,
    pub reason: String,
    #[schema(maximum = 100)]
    pub risk_score: u8,
    pub rule: String,
    /// `builtin` or `plugin:<name>`.
    pub source: String,
    pub suggested_action: String,
}

/// Findings of the last scan in numbers.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FindingCounts {
    pub findings: u64,
    /// Resources kept out by their `svc:ignore` tag.
    pub ignored: u64,
    pub nodes_flagged: u64,
    pub projected_savings_usd_mo: f64,
    pub waste_usd_mo: f64,
}

/// What one engine or plugin found.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineTally {
    /// Findings that decide their resource's verdict.
    pub decided: u64,
    pub findings: u64,
    pub projected_savings_usd_mo: f64,
    pub source: String,
    pub waste: u64,
}

/// A resource kept out of the findings, and why.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IgnoredResource {
    pub crn: Crn,
    pub reason: String,
}

/// Active resources by their verdict.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdicts {
    pub clear: u64,
    pub optimize: u64,
    pub waste: u64,
}

listed_str! {
    /// `waste` or `optimize` (a cheaper shape for a resource in use).
    RuleKind ["waste", "optimize"]
}

/// A heuristic rule and what it found. Built-in rules also say what they check.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeuristicRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub condition: Option<&'static str>,
    pub decided: u64,
    pub findings: u64,
    pub kind: RuleKind,
    pub name: String,
    pub projected_savings_usd_mo: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub provider: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, maximum = 100)]
    pub risk_score: Option<u8>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub suggested_action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub types: Option<Vec<&'static str>>,
    pub waste: u64,
}

listed_str! {
    /// `waste_among_in_use`: waste where most of the group is in use; `in_use_among_waste`: the
    /// other way round.
    OutlierDirection ["waste_among_in_use", "in_use_among_waste"]
}

/// A group of waste members all decided by one rule: one grouped finding.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupedFinding {
    pub group_size: u64,
    /// Waste members, all decided by `rule`.
    pub members: u64,
    /// The rule that decided every waste member.
    pub rule: String,
    /// CRNs of the members with the largest savings (up to 5).
    pub samples: Vec<Crn>,
    pub savings_usd_mo: f64,
    /// The group's signature, 16 hex digits.
    pub signature: String,
    pub summary: String,
    #[serde(rename = "type")]
    pub ty: String,
}

/// A member whose verdict differs from its group's.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternOutlier {
    pub crn: Crn,
    pub direction: OutlierDirection,
    pub group_size: u64,
    pub group_waste: u64,
    pub reason: String,
    pub signature: String,
}

/// What the `engine.pattern` phase of the last scan found: resources
/// grouped by a structural signature of their neighbourhood (type, state
/// and two rounds of edge kinds and neighbours' signatures), members whose
/// verdict differs from their group, and groups of identical waste.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternStatus {
    pub distinct_signatures: u64,
    pub duration_ms: u64,
    /// Up to 100 grouped findings, largest savings first.
    pub grouped: Vec<GroupedFinding>,
    /// Resources in a group.
    pub grouped_nodes: u64,
    pub grouped_total: u64,
    pub groups: u64,
    /// Share of a group its majority side must hold for the other side to be outliers.
    pub majority: f64,
    /// Members a set of alike resources needs to count as a group.
    pub min_group: u64,
    /// Up to 100 outliers, largest groups first.
    pub outliers: Vec<PatternOutlier>,
    pub outliers_total: u64,
    /// Refinement rounds (the neighbourhood depth a signature describes).
    pub rounds: u64,
    pub scan_seq: u64,
    /// Active resources given a signature.
    pub signatures: u64,
}

/// `GET /api/v1/heuristics/status`: counts, verdicts, and which engine or
/// plugin flagged what.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeuristicsStatus {
    #[schema(value_type = crate::wire::payloads::BuiltinStats)]
    pub builtin: Value,
    #[schema(inline)]
    pub counts: FindingCounts,
    /// Findings by where they came from.
    pub engines: Vec<EngineTally>,
    /// Up to 100 ignored resources, by CRN.
    pub ignored: Vec<IgnoredResource>,
    pub observed_at: u64,
    pub pattern: PatternStatus,
    #[schema(value_type = Vec<crate::wire::payloads::HeuristicOutcome>)]
    pub plugins: Vec<Value>,
    pub price_table: &'static str,
    /// Every built-in rule (with its condition, even without findings), then the rules plugins
    /// named.
    pub rules: Vec<HeuristicRule>,
    pub scan_seq: u64,
    #[schema(inline)]
    pub verdicts: Verdicts,
}

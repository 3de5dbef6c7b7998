//! Response body of `GET /api/v1/anomalies`. Fields are declared in the
//! order they are written: by name.

use serde::Serialize;
use utoipa::ToSchema;

use crate::wire::{Crn, listed_str};

listed_str! {
    /// What node costs were compared with: nothing (the first scan of a data directory), the
    /// previous scan of this run, or the graph as loaded at start (the last scan before a
    /// restart).
    Baseline ["none", "previous_scan", "restart"]
}

listed_str! {
    /// Which way a cost moved.
    Direction ["up", "down"]
}

listed_str! {
    /// How a node's cost changed: it changed, the node is new, or it was removed.
    ChangeKind ["changed", "new", "removed"]
}

/// The thresholds an anomaly must pass.
#[derive(Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    pub min_change_pct: f64,
    pub min_change_usd_mo: f64,
    pub type_min_change_pct: f64,
    pub type_min_changes: usize,
    pub z: f64,
}

/// The analysis in numbers.
#[derive(Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnomalySummary {
    #[schema(minimum = 1)]
    pub history_retention_scans: usize,
    pub history_scans: usize,
    /// Node anomalies found, all types (the list keeps the 10,000 highest |z|).
    pub node_anomalies: u64,
    pub nodes_changed: u64,
    /// Nodes there at the previous scan or now.
    pub nodes_compared: u64,
    pub type_anomalies: usize,
}

/// Anomalies that pass the `type` and `provider` filters, before `limit`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Matching {
    pub nodes: usize,
    pub types: usize,
}

/// A node whose cost changed unusually for its type.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeAnomaly {
    /// current - previous.
    pub change: f64,
    /// Change in percent of the previous cost; null when that was 0.
    #[schema(required = true)]
    pub change_pct: Option<f64>,
    pub crn: Crn,
    /// Monthly USD now (0 for a removed node).
    pub current: f64,
    pub direction: Direction,
    pub kind: ChangeKind,
    /// Monthly USD at the previous scan (0 for a new node).
    pub previous: f64,
    pub provider: String,
    #[schema(minimum = 1)]
    pub scan_seq: u64,
    #[serde(rename = "type")]
    pub ty: String,
    /// Robust z-score of the change among the changes of the node's type.
    pub z: f64,
}

/// A resource type whose total cost changed unusually.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeAnomaly {
    pub change: f64,
    #[schema(required = true)]
    pub change_pct: Option<f64>,
    pub count: u64,
    pub current: f64,
    pub direction: Direction,
    pub history_changes: u64,
    /// Total monthly USD of the type at the previous recorded scan.
    pub previous: f64,
    pub previous_count: u64,
    pub provider: String,
    #[schema(minimum = 1)]
    pub scan_seq: u64,
    #[serde(rename = "type")]
    pub ty: String,
    /// Robust z-score of the change among the type's changes over the recorded scans.
    pub z: f64,
}

/// A resource type at one recorded scan.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryPoint {
    pub cost_usd_mo: f64,
    pub count: u64,
    pub scan_seq: u64,
    pub waste_usd_mo: f64,
}

/// A resource type's cost history in brief.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeHistory {
    #[schema(required = true)]
    pub change_usd_mo: Option<f64>,
    pub cost_usd_mo: f64,
    /// Active resources at the last recorded scan.
    pub count: u64,
    pub first_scan_seq: u64,
    pub last_scan_seq: u64,
    pub max_cost_usd_mo: f64,
    pub mean_cost_usd_mo: f64,
    pub min_cost_usd_mo: f64,
    #[schema(required = true)]
    pub previous_cost_usd_mo: Option<f64>,
    pub provider: String,
    /// The last 10 recorded scans, oldest first.
    pub recent: Vec<HistoryPoint>,
    /// Recorded scans in the window (a scan without the type counts it as 0).
    #[schema(minimum = 1)]
    pub scans: u64,
    #[serde(rename = "type")]
    pub ty: String,
    /// What the deciding waste findings on the type would save a month.
    pub waste_usd_mo: f64,
}

/// The cost anomalies of the last analysed scan and each type's cost history in brief.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Anomalies<'a> {
    pub baseline: &'a Baseline,
    #[schema(minimum = 30, maximum = 30)]
    pub cache_ttl_s: u64,
    /// When this answer was computed; the same for every request within `cache_ttl_s`.
    #[schema(format = DateTime)]
    pub generated_at: &'a str,
    /// Every type recorded in the kept scans, largest current cost first.
    pub history: Vec<&'a TypeHistory>,
    #[schema(inline)]
    pub matching: Matching,
    /// Highest |z| first, at most `limit`.
    pub nodes: Vec<&'a NodeAnomaly>,
    /// The scan node costs were compared with (0 when none).
    pub previous_scan_seq: u64,
    /// The scan analysed (0 before the first).
    pub scan_seq: u64,
    #[schema(inline)]
    pub summary: &'a AnomalySummary,
    #[schema(inline)]
    pub thresholds: &'a Thresholds,
    /// Highest |z| first, at most `limit`.
    pub types: Vec<&'a TypeAnomaly>,
}

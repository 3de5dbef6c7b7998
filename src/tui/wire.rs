//! The daemon's answers as the terminal UI reads them (the shapes of
//! `schemas/openapi.yaml`). Every field has a default, so a field the
//! daemon adds or leaves out never makes a screen fail to load.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One row of `GET /api/v1/nodes` (`TuiRow`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Row {
    /// The workspace it is listed in (`compute`, `storage`, ...).
    pub category: String,
    pub crn: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub provider: String,
    pub region: String,
    pub state: String,
    pub cost_usd_mo: f64,
    pub is_waste: bool,
    pub waste_reason: String,
    pub phase: String,
    pub reachability: String,
}

/// A window of rows (`TuiRowPage`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RowPage {
    pub rows: Vec<Row>,
    /// The position of the first row among all the rows.
    pub offset: u64,
    pub total: u64,
    pub workspaces: Workspaces,
}

/// Rows per workspace (`WorkspaceCounts`).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub struct Workspaces {
    pub compute: u64,
    pub storage: u64,
    pub network: u64,
    pub database: u64,
    pub serverless: u64,
    pub kubernetes: u64,
    pub other: u64,
}

impl Workspaces {
    /// The counts in the order of the workspace tabs, `all` first.
    pub fn by_category(&self) -> [u64; 8] {
        let w = *self;
        let each = [
            w.compute,
            w.storage,
            w.network,
            w.database,
            w.serverless,
            w.kubernetes,
            w.other,
        ];
        let mut out = [0u64; 8];
        out[0] = each.iter().sum();
        out[1..].copy_from_slice(&each);
        out
    }
}

/// `GET /api/v1/graph/nodes/{crn}` (`NodeDetail`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct NodeDetail {
    pub crn: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub provider: String,
    pub region: String,
    pub account: String,
    pub state: String,
    pub cost_usd_mo: f64,
    pub is_waste: bool,
    pub waste_reason: String,
    pub risk_score: f64,
    pub reachability: String,
    pub phase: String,
    pub verdict: String,
    pub tags: BTreeMap<String, String>,
    pub properties: BTreeMap<String, Value>,
    pub edges_in: u64,
    pub edges_out: u64,
}

/// One edge of `GET /api/v1/graph/nodes/{crn}/edges`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Edge {
    pub source_crn: String,
    pub target_crn: String,
    #[serde(rename = "type")]
    pub relation: String,
    pub inferred: bool,
}

/// `GET /api/v1/graph/nodes/{crn}/edges` (`NodeEdges`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct NodeEdges {
    pub outgoing: Vec<Edge>,
    pub incoming: Vec<Edge>,
    pub outgoing_total: u64,
    pub incoming_total: u64,
}

/// `GET /api/v1/graph/blast-radius/{crn}` (`BlastRadius`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Blast {
    pub affected: Vec<Affected>,
    pub affected_count: u64,
    pub total_cost_usd_mo: f64,
    pub max_depth: u32,
}

/// A resource a removal would affect (`AffectedNode`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Affected {
    pub crn: String,
    pub depth: u32,
    pub relation: String,
    pub cost_usd_mo: f64,
}

/// `GET /api/v1/oracle/{crn}` (`OracleResult`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Oracle {
    pub enabled: bool,
    pub reachability: String,
    pub entry_point: bool,
    pub entry_crn: Option<String>,
    pub proof: Vec<ProofStep>,
    pub risk_score: f64,
    pub verdict: Option<String>,
}

/// One edge of a reachability proof, entry point first.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ProofStep {
    pub from: String,
    pub to: String,
    pub relation: String,
}

/// `GET /api/v1/remediation/queue` (`RemediationQueue`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Queue {
    pub counts: BTreeMap<String, u64>,
    pub stages: BTreeMap<String, Vec<Item>>,
}

/// A resource in the remediation pipeline (`RemediationItem`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Item {
    pub crn: String,
    pub stage: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub action: String,
    pub plan_hash: String,
    pub savings_usd_mo: f64,
    pub risk_score: f64,
    pub reason: String,
    pub blockers: Vec<String>,
}

/// `GET /api/v1/plan?crn=` (`RemediationPlan`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Plan {
    pub crn: String,
    pub plan_hash: String,
    pub intent: String,
    pub stage: String,
    pub savings_usd_mo: f64,
    pub blast_radius: u64,
    pub steps: Vec<PlanStep>,
    pub terraform: String,
}

/// One step of a plan and what undoes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PlanStep {
    pub index: u32,
    pub action: String,
    pub inverse: String,
}

/// One frame of `/events` (`Envelope`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Envelope {
    pub seq: u64,
    pub event_type: String,
    pub timestamp: i64,
    pub crn: String,
    pub actor: String,
    pub message: String,
    pub payload: Value,
}

impl Envelope {
    /// The hash that undoes what this event did (a quarantine or a
    /// committed step), when it names one.
    pub fn revert_hash(&self) -> Option<&str> {
        self.payload
            .get("compensating_payload_hash")
            .and_then(Value::as_str)
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    }
}

/// `GET /api/v1/session` (`SessionInfo`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Session {
    pub name: String,
    pub role: String,
}

/// The error body of a failed request.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
}

/// `GET /api/v1/history` as far as the UI needs it: the head of the ledger.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HistoryHead {
    pub events: Vec<HistorySeq>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HistorySeq {
    pub seq: u64,
}

//! The node, edge and finding objects every route that returns them shares.
//!
//! Fields are declared in the order they are written: by name, as the
//! objects have always been written.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::category::Category;
use super::names::{Crn, Phase, Reachability, Relation};

/// Resource tags or labels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
#[serde(transparent)]
pub struct Tags(pub BTreeMap<String, String>);

/// Provider-specific attributes, each with its JSON type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
#[serde(transparent)]
pub struct Properties(pub Map<String, Value>);

/// A node of the graph (live, or a stored version).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub account: String,
    /// Estimated monthly cost in USD.
    pub cost_usd_mo: f64,
    /// Unix seconds of the resource's creation.
    pub creation_timestamp: u64,
    pub crn: Crn,
    pub is_waste: bool,
    pub kind: String,
    pub phase: Phase,
    pub physical_id: String,
    pub properties: Properties,
    pub provider: String,
    pub reachability: Reachability,
    pub region: String,
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: f64,
    pub service: String,
    /// Provider-reported lifecycle state, for example `running`.
    pub state: String,
    pub tags: Tags,
    /// `<service>:<kind>`, for example `ec2:volume`.
    #[serde(rename = "type")]
    pub ty: String,
    /// Start of this version, microseconds since the Unix epoch.
    pub valid_from: u64,
    /// End of this version (logical deletion), microseconds since the epoch; 0 while current.
    pub valid_to: u64,
    /// Engine classification; empty when none.
    pub verdict: String,
    /// Why the node is waste; empty when it is not.
    pub waste_reason: String,
}

/// A node object plus its visible edge counts.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeDetail {
    pub account: String,
    pub cost_usd_mo: f64,
    pub creation_timestamp: u64,
    pub crn: Crn,
    /// Visible incoming edges.
    pub edges_in: u64,
    /// Visible outgoing edges.
    pub edges_out: u64,
    /// The last scan's heuristic findings about this node, the deciding one first.
    pub findings: Vec<Finding>,
    pub is_waste: bool,
    pub kind: String,
    pub phase: Phase,
    pub physical_id: String,
    pub properties: Properties,
    pub provider: String,
    pub reachability: Reachability,
    pub region: String,
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: f64,
    pub service: String,
    pub state: String,
    pub tags: Tags,
    #[serde(rename = "type")]
    pub ty: String,
    pub valid_from: u64,
    pub valid_to: u64,
    pub verdict: String,
    pub waste_reason: String,
}

impl NodeDetail {
    /// `node` with its visible edge counts and findings.
    pub fn new(node: Node, edges_in: u64, edges_out: u64, findings: Vec<Finding>) -> NodeDetail {
        let Node {
            account,
            cost_usd_mo,
            creation_timestamp,
            crn,
            is_waste,
            kind,
            phase,
            physical_id,
            properties,
            provider,
            reachability,
            region,
            risk_score,
            service,
            state,
            tags,
            ty,
            valid_from,
            valid_to,
            verdict,
            waste_reason,
        } = node;
        NodeDetail {
            account,
            cost_usd_mo,
            creation_timestamp,
            crn,
            edges_in,
            edges_out,
            findings,
            is_waste,
            kind,
            phase,
            physical_id,
            properties,
            provider,
            reachability,
            region,
            risk_score,
            service,
            state,
            tags,
            ty,
            valid_from,
            valid_to,
            verdict,
            waste_reason,
        }
    }
}

/// One heuristic verdict about one resource.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub annotations: BTreeMap<String, String>,
    pub is_waste: bool,
    pub projected_savings_usd_mo: f64,
    pub reason: String,
    /// 0 to 79 for plugins (higher values are capped), up to 100 for built-in rules.
    #[schema(maximum = 100)]
    pub risk_score: u8,
    pub rule: String,
    /// `builtin` or `plugin:<name>`.
    pub source: String,
    pub suggested_action: String,
}

/// One row of the terminal UI's node table.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TuiRow {
    /// The workspace the row is listed in.
    pub category: Category,
    pub cost_usd_mo: f64,
    pub crn: Crn,
    pub is_waste: bool,
    pub phase: Phase,
    pub provider: String,
    pub reachability: Reachability,
    pub region: String,
    pub state: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub waste_reason: String,
}

/// A directed edge of the live graph.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// True when the engine inferred the edge rather than a source reporting it.
    pub inferred: bool,
    pub properties: Properties,
    pub source_crn: Crn,
    pub target_crn: Crn,
    #[serde(rename = "type")]
    pub ty: Relation,
}

/// A stored edge version, an `Edge` with its validity interval.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EdgeVersion {
    pub inferred: bool,
    pub properties: Properties,
    pub source_crn: Crn,
    pub target_crn: Crn,
    #[serde(rename = "type")]
    pub ty: Relation,
    pub valid_from: u64,
    /// Microseconds since the epoch; 0 while current.
    pub valid_to: u64,
}

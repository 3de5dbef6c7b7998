//! Response bodies of the live-graph routes. Fields are declared in the
//! order they are written: by name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::wire::{Crn, Edge, HeuristicFlag, Node, Relation};

/// `GET /api/v1/graph/stats` (SPEC 4.2), with where the graph came from.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphStats {
    pub active_nodes: u64,
    pub logically_deleted: u64,
    pub projected_savings_usd_mo: f64,
    /// Node count per provider.
    pub providers: BTreeMap<String, u64>,
    /// True when active nodes of the graph come from a simulated estate
    /// (the mock estate): a provider a simulated source answered for has
    /// nodes, and no real source answered for it.
    pub simulated: bool,
    /// The sources that filled this graph (every source that has completed
    /// a scan of it), and any source of the last scan that has not, by name.
    pub sources: Vec<GraphSource>,
    pub total_cost_usd_mo: f64,
    pub total_edges: u64,
    pub total_nodes: u64,
    pub waste_nodes: u64,
}

/// One scan source of the graph: a provider plugin or the mock estate.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphSource {
    /// How this source did in the daemon's last scan; null when the last
    /// scan did not run it.
    pub last_scan: Option<SourceScan>,
    /// The source's name: a plugin's (`aws`), or `mock`.
    pub name: String,
    /// Providers its last successful scan answered for (declared or
    /// reported); for a source that never succeeded, those it declares.
    pub providers: Vec<String>,
    /// Whether its estate is simulated (the mock estate, `svc-plugin-mock`).
    pub simulated: bool,
}

/// A source's part in one scan.
#[derive(Clone, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceScan {
    /// Why it failed; empty when it succeeded.
    pub error: String,
    /// When the scan finished, RFC 3339.
    pub finished_at: String,
    /// Nodes it reported.
    pub nodes: u64,
    pub ok: bool,
    pub scan_seq: u64,
}

/// A page of nodes.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodePage {
    /// Cursor of the next page; empty on the last page.
    pub next_cursor: String,
    pub nodes: Vec<Node>,
    /// Nodes matching the filters, over all pages.
    pub total: u64,
}

/// A node's visible edges.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeEdges {
    pub crn: Crn,
    pub incoming: Vec<Edge>,
    pub incoming_total: u64,
    pub outgoing: Vec<Edge>,
    pub outgoing_total: u64,
    /// True when either list was cut at `limit`.
    pub truncated: bool,
}

/// A node that removing another would affect.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AffectedNode {
    pub cost_usd_mo: f64,
    pub crn: Crn,
    /// Hops from the removed node (1 is a direct dependent).
    #[schema(minimum = 1)]
    pub depth: u32,
    pub relation: Relation,
    #[serde(rename = "type")]
    pub ty: String,
    pub via_crn: Crn,
}

/// What removing a node would affect.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BlastRadius {
    /// Affected nodes in breadth-first order, at most `limit`.
    pub affected: Vec<AffectedNode>,
    /// All affected nodes, also those beyond `limit`.
    pub affected_count: u64,
    pub crn: Crn,
    pub max_depth: u32,
    /// Summed monthly cost of all affected nodes, to the cent.
    pub total_cost_usd_mo: f64,
    pub truncated: bool,
}

/// What the flow view shows of a node besides its name.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowNodeData {
    pub cost_usd_mo: f64,
    pub is_waste: bool,
    pub state: String,
}

/// A node of the flow view.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowNode {
    pub data: FlowNodeData,
    pub id: Crn,
    /// The physical id.
    pub label: String,
    pub provider: String,
    #[serde(rename = "type")]
    pub ty: String,
}

/// An edge of the flow view.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowEdge {
    /// Unique within the response.
    pub id: String,
    pub source: Crn,
    pub target: Crn,
    #[serde(rename = "type")]
    pub ty: Relation,
}

/// `GET /api/v1/graph`: nodes and edges for the web UI's flow view.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowGraph {
    pub edges: Vec<FlowEdge>,
    pub nodes: Vec<FlowNode>,
    /// Visible nodes in the graph.
    pub total_nodes: u64,
    /// True when fewer nodes are shown than are visible.
    pub truncated: bool,
}

/// A placed node of the laid-out topology.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LayoutNode {
    /// Id of the node's cluster.
    pub cluster: String,
    pub crn: Crn,
    pub provider: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub x: f64,
    pub y: f64,
}

/// An edge of the laid-out topology.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LayoutEdge {
    pub source: Crn,
    pub target: Crn,
    #[serde(rename = "type")]
    pub ty: Relation,
}

/// The shown nodes of one provider, account and region, and where they sit.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub account: String,
    pub height: f64,
    /// `provider/account/region`.
    pub id: String,
    pub node_count: u64,
    pub provider: String,
    pub region: String,
    pub width: f64,
    pub x: f64,
    pub y: f64,
}

/// `GET /api/v1/graph/topology`: the graph laid out in clusters.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LayoutGraph {
    pub clusters: Vec<Cluster>,
    pub edges: Vec<LayoutEdge>,
    pub nodes: Vec<LayoutNode>,
    pub total_nodes: u64,
    pub truncated: bool,
}

/// `GET /api/v1/topology` (SPEC 4.2). The body is written by hand, in the
/// order `topology_version`, `meta`, `nodes`, `edges`, `checksum_sha256`,
/// and read back into this type by the tests.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// 64 lowercase hex digits; see the operation description.
    pub checksum_sha256: String,
    pub edges: Vec<TopologyEdge>,
    pub meta: TopologyMeta,
    pub nodes: Vec<TopologyNode>,
    /// `v<N>`, N the graph generation (bumped by every change).
    pub topology_version: String,
}

/// A node of the topology snapshot.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologyNode {
    pub cost_usd_mo: f64,
    pub crn: Crn,
    pub heuristics_flagged: Vec<HeuristicFlag>,
    pub provenance: Provenance,
    pub state: String,
    #[serde(rename = "type")]
    pub ty: String,
}

/// An edge of the topology snapshot.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologyEdge {
    pub source_crn: Crn,
    pub target_crn: Crn,
    #[serde(rename = "type")]
    pub ty: Relation,
}

/// Totals of the topology snapshot.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologyMeta {
    pub total_edges: u64,
    pub total_nodes: u64,
    pub waste_identified_usd_mo: f64,
}

/// Source-control origin of a resource; empty strings and line 0 when unknown.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub author: String,
    pub commit: String,
    pub file: String,
    pub line: u64,
}

//! Bounded, drawable views of the graph for the web UI: `GET /api/v1/graph`
//! (flow visualisation) and `GET /api/v1/graph/topology` (positions and
//! clusters).
//!
//! Both show at most `limit` visible nodes (default 2000, max 20000). The
//! nodes are chosen so that edges survive the cut: visible nodes are taken
//! in id order, and each one pulls in its neighbourhood breadth-first
//! before the next is started. Edges are those among the chosen nodes.

use std::collections::{BTreeMap, HashSet, VecDeque};

use axum::extract::State;
use axum::response::Response;
use svc_engine::graph::NodeRef;
use svc_engine::intern::InternerReader;
use svc_engine::{Graph, NodeId};

use super::blocking;
use super::body::{Cluster, FlowEdge, FlowGraph, FlowNode, FlowNodeData, LayoutEdge, LayoutGraph, LayoutNode};
use crate::error::ApiResult;
use crate::routes::ApiQuery;
use crate::routes::query::Limit;
use crate::state::AppState;
use crate::wire::{self, Crn};

/// `GET /api/v1/graph` and `GET /api/v1/graph/topology`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LayoutQuery {
    /// Most nodes drawn.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<2000, 20_000>,
}

/// Distance between neighbouring nodes in a cluster, in layout units.
const NODE_SPACING: f64 = 60.0;
/// Empty space around and between clusters.
const CLUSTER_GAP: f64 = 120.0;

/// The chosen nodes (in selection order) and how many nodes are visible.
struct Selection {
    nodes: Vec<NodeId>,
    members: HashSet<NodeId>,
    visible: u64,
}

impl Selection {
    fn truncated(&self) -> bool {
        self.visible > self.nodes.len() as u64
    }
}

fn select(g: &Graph, now: u64, limit: usize) -> Selection {
    let mut sel = Selection {
        nodes: Vec::new(),
        members: HashSet::new(),
        visible: 0,
    };
    let mut queue = VecDeque::new();
    for n in g.nodes().filter(|n| n.is_visible(now)) {
        sel.visible += 1;
        if sel.nodes.len() >= limit || sel.members.contains(&n.id()) {
            continue;
        }
        queue.push_back(n.id());
        sel.members.insert(n.id());
        sel.nodes.push(n.id());
        while let Some(id) = queue.pop_front() {
            let Some(u) = g.node(id) else { continue };
            let out = u
                .out_edges()
                .filter(|e| g.is_edge_visible(e.id(), now))
                .map(|e| e.target());
            let inc = u
                .in_edges()
                .filter(|e| g.is_edge_visible(e.id(), now))
                .map(|e| e.source());
            for v in out.chain(inc) {
                if sel.nodes.len() >= limit {
                    queue.clear();
                    break;
                }
                if sel.members.insert(v) {
                    sel.nodes.push(v);
                    queue.push_back(v);
                }
            }
        }
    }
    sel
}

/// Visible edges among the chosen nodes.
fn edges_among<'g>(g: &'g Graph, sel: &Selection, now: u64) -> Vec<svc_engine::graph::EdgeRef<'g>> {
    let mut out = Vec::new();
    for n in sel.nodes.iter().filter_map(|id| g.node(*id)) {
        out.extend(
            n.out_edges()
                .filter(|e| sel.members.contains(&e.target()) && g.is_edge_visible(e.id(), now)),
        );
    }
    out
}

fn crn(r: &InternerReader<'_>, n: &NodeRef<'_>) -> String {
    wire::crn_of(r, n.key(), n.physical_id())
}

/// `GET /api/v1/graph?limit=`: `{nodes: [{id, label, type, provider, data:
/// {cost_usd_mo, state, is_waste}}], edges: [{id, source, target, type}],
/// truncated, total_nodes}`. A node's `id` is its CRN and its label the
/// physical id; an edge's `id` is unique within the response.
#[utoipa::path(
    get,
    path = "/graph",
    operation_id = "getFlowGraph",
    tag = "graph",
    summary = "Nodes and edges for the web UI's flow visualisation.",
    description = r#"At most `limit` visible nodes, chosen so that edges survive the cut
(each node pulls in its neighbourhood breadth-first); edges are those
among the chosen nodes."#,
    params(LayoutQuery),
    responses(
        (status = 200, description = "The flow graph.", body = crate::routes::graph::FlowGraph, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn flow_graph(State(state): State<AppState>, ApiQuery(q): ApiQuery<LayoutQuery>) -> ApiResult<Response> {
    let limit = q.limit.0;
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        let sel = select(&g, now, limit);
        let edges = edges_among(&g, &sel, now);
        let r = g.interner().reader();
        let nodes = sel
            .nodes
            .iter()
            .filter_map(|id| g.node(*id))
            .map(|n| FlowNode {
                data: FlowNodeData {
                    cost_usd_mo: wire::f32_value(n.cost_usd_mo()),
                    is_waste: n.is_waste(),
                    state: r.resolve(n.state()).to_owned(),
                },
                id: Crn(crn(&r, &n)),
                label: n.physical_id().to_owned(),
                provider: r.resolve(n.provider()).to_owned(),
                ty: r.resolve(n.ty()).to_owned(),
            })
            .collect();
        let edges = edges
            .iter()
            .map(|e| FlowEdge {
                id: format!("e{}-{}", e.id().shard(), e.id().row()),
                source: Crn(super::crn_with(&g, &r, e.source())),
                target: Crn(super::crn_with(&g, &r, e.target())),
                ty: e.relation().into(),
            })
            .collect();
        Ok(FlowGraph {
            edges,
            nodes,
            total_nodes: sel.visible,
            truncated: sel.truncated(),
        })
    })
    .await
}

/// One placed node.
struct Placed {
    crn: String,
    id: NodeId,
}

/// `GET /api/v1/graph/topology?limit=`: `{nodes: [{crn, type, provider,
/// cluster, x, y}], edges: [{source, target, type}], clusters: [{id,
/// provider, account, region, node_count, x, y, width, height}], truncated,
/// total_nodes}`.
///
/// A cluster groups the chosen nodes of one provider, account and region
/// (id `provider/account/region`). The layout is deterministic: clusters,
/// sorted by id, sit on a square grid of equal cells; inside its cell a
/// cluster's nodes, sorted by CRN, fill a square grid row by row.
#[utoipa::path(
    get,
    path = "/graph/topology",
    operation_id = "getLayout",
    tag = "graph",
    summary = "The graph laid out, with node positions and clusters.",
    description = r#"Node selection as for `/api/v1/graph`. A cluster groups the chosen nodes
of one provider, account and region (id `provider/account/region`). The
layout is deterministic: clusters, sorted by id, sit on a square grid of
equal cells; inside its cell a cluster's nodes, sorted by CRN, fill a
square grid row by row."#,
    params(LayoutQuery),
    responses(
        (status = 200, description = "The laid-out graph.", body = crate::routes::graph::LayoutGraph, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn graph_topology(State(state): State<AppState>, ApiQuery(q): ApiQuery<LayoutQuery>) -> ApiResult<Response> {
    let limit = q.limit.0;
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        let sel = select(&g, now, limit);
        let edges = edges_among(&g, &sel, now);
        let r = g.interner().reader();
        let mut clusters: BTreeMap<String, (String, String, String, Vec<Placed>)> = BTreeMap::new();
        for n in sel.nodes.iter().filter_map(|id| g.node(*id)) {
            let (p, a, reg) = (r.resolve(n.provider()), r.resolve(n.account()), r.resolve(n.region()));
            let entry = clusters
                .entry(format!("{p}/{a}/{reg}"))
                .or_insert_with(|| (p.to_owned(), a.to_owned(), reg.to_owned(), Vec::new()));
            entry.3.push(Placed {
                crn: crn(&r, &n),
                id: n.id(),
            });
        }
        let side = |count: usize| (count as f64).sqrt().ceil().max(1.0);
        let largest = clusters.values().map(|c| c.3.len()).max().unwrap_or(0);
        let cell = side(largest) * NODE_SPACING + CLUSTER_GAP;
        let columns = side(clusters.len()) as usize;
        let mut nodes = Vec::with_capacity(sel.nodes.len());
        let mut cluster_list = Vec::with_capacity(clusters.len());
        for (i, (id, (provider, account, region, mut members))) in clusters.into_iter().enumerate() {
            members.sort_by(|a, b| a.crn.cmp(&b.crn));
            let (cx, cy) = ((i % columns) as f64 * cell, (i / columns) as f64 * cell);
            let k = side(members.len()) as usize;
            let extent = k as f64 * NODE_SPACING;
            let node_count = members.len() as u64;
            for (j, m) in members.into_iter().enumerate() {
                let Some(n) = g.node(m.id) else { continue };
                nodes.push(LayoutNode {
                    cluster: id.clone(),
                    crn: Crn(m.crn),
                    provider: provider.clone(),
                    ty: r.resolve(n.ty()).to_owned(),
                    x: cx + (j % k) as f64 * NODE_SPACING + NODE_SPACING / 2.0,
                    y: cy + (j / k) as f64 * NODE_SPACING + NODE_SPACING / 2.0,
                });
            }
            cluster_list.push(Cluster {
                account,
                height: extent,
                id,
                node_count,
                provider,
                region,
                width: extent,
                x: cx,
                y: cy,
            });
        }
        let edges = edges
            .iter()
            .map(|e| LayoutEdge {
                source: Crn(super::crn_with(&g, &r, e.source())),
                target: Crn(super::crn_with(&g, &r, e.target())),
                ty: e.relation().into(),
            })
            .collect();
        Ok(LayoutGraph {
            clusters: cluster_list,
            edges,
            nodes,
            total_nodes: sel.visible,
            truncated: sel.truncated(),
        })
    })
    .await
}

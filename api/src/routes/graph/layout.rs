//! Bounded, drawable views of the graph for the web UI: `GET /api/v1/graph`
//! (flow visualisation) and `GET /api/v1/graph/topology` (positions and
//! clusters).
//!
//! Both show at most `limit` visible nodes (in JSON default 2000, max
//! 20000; in the binary form default 100,000, max 250,000). The nodes are
//! chosen so that edges survive the cut: visible nodes are taken in id
//! order, and each one pulls in its neighbourhood breadth-first before the
//! next is started. Edges are those among the chosen nodes.
//!
//! With `Accept: application/x-flatbuffers` both answer the same binary
//! `Graph` (SPEC 2.4): the chosen nodes laid out as `/graph/topology` lays
//! them out, in CRN order, and the edges among them. What the JSON forms
//! carry beyond the `Node` table's own fields goes into each node's
//! `properties` ([`LAYOUT_KEYS`]). The clusters are not nodes: the client
//! takes them from `/graph/topology?clusters_only=true` (JSON) with the
//! same `limit`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use svc_engine::graph::{EdgeRef, NodeRef};
use svc_engine::intern::InternerReader;
use svc_engine::{Engine, Graph, NodeId};

use super::binary::{self, wants_binary};
use super::blocking;
use super::body::{Cluster, FlowEdge, FlowGraph, FlowNode, FlowNodeData, LayoutEdge, LayoutGraph, LayoutNode};
use crate::error::{ApiError, ApiResult};
use crate::fbs::{EdgeFields, Finished, GraphEncoder, NodeFields, Str};
use crate::routes::ApiQuery;
use crate::routes::query::{Flag, LayoutLimit};
use crate::state::AppState;
use crate::wire::{self, Crn};

/// `GET /api/v1/graph`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LayoutQuery {
    /// Most nodes drawn. The schema gives the JSON form's bounds; in the
    /// binary form (`Accept: application/x-flatbuffers`) 1 to 250000
    /// (default 100000).
    #[serde(default)]
    #[param(inline)]
    limit: LayoutLimit,
}

/// `GET /api/v1/graph/topology`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GraphTopologyQuery {
    /// Most nodes drawn. The schema gives the JSON form's bounds; in the
    /// binary form (`Accept: application/x-flatbuffers`) and with
    /// `clusters_only`, 1 to 250000 (default 100000).
    #[serde(default)]
    #[param(inline)]
    limit: LayoutLimit,
    /// Answer the clusters alone (JSON, `nodes` and `edges` empty), for a
    /// client that takes the nodes and edges in the binary form: the same
    /// `limit` chooses the same nodes, so the same clusters.
    #[serde(default)]
    #[param(inline)]
    clusters_only: Flag,
}

/// The keys of a node's `properties` in the binary form of the layout
/// views, in this order: position (`x`, `y`, decimal strings in layout
/// units), the id of its cluster (`cluster`, as in the JSON), `provider`,
/// `label` (the physical id) and `waste` (`true` or `false`). The `Node`
/// table carries the rest: `crn`, `type`, `state`, `cost_usd_mo`,
/// `creation_timestamp`; `valid_to` is 0 (only visible nodes are drawn).
pub const LAYOUT_KEYS: [&str; 6] = ["x", "y", "cluster", "provider", "label", "waste"];

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
fn edges_among<'g>(g: &'g Graph, sel: &Selection, now: u64) -> Vec<EdgeRef<'g>> {
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
        (status = 200, description = "The flow graph; with `Accept: application/x-flatbuffers`, the binary graph form of `/api/v1/graph/topology`.", content(
            (crate::routes::graph::FlowGraph = "application/json"),
            (crate::openapi::FlatBuffersGraph = "application/x-flatbuffers"),
        )),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn flow_graph(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<LayoutQuery>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    if wants_binary(&headers) {
        return binary_layout(engine, q.limit.resolve(true)?).await;
    }
    let limit = q.limit.resolve(false)?;
    let resp = blocking(move || {
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
    .await?;
    Ok(binary::vary(resp))
}

/// A chosen node, placed.
struct Placed {
    id: NodeId,
    crn: String,
    /// Index into [`Layout::clusters`].
    cluster: usize,
    x: f64,
    y: f64,
}

/// The chosen nodes, placed (cluster by cluster, each in CRN order), and
/// their clusters.
struct Layout {
    nodes: Vec<Placed>,
    clusters: Vec<Cluster>,
}

/// A cluster being gathered: provider, account, region, members (CRN, id).
type Group = (String, String, String, Vec<(String, NodeId)>);

/// Lays the chosen nodes out: a cluster groups the nodes of one provider,
/// account and region; clusters, sorted by id, sit on a square grid of
/// equal cells; inside its cell a cluster's nodes, sorted by CRN, fill a
/// square grid row by row.
fn place(g: &Graph, r: &InternerReader<'_>, sel: &Selection) -> Layout {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for n in sel.nodes.iter().filter_map(|id| g.node(*id)) {
        let (p, a, reg) = (r.resolve(n.provider()), r.resolve(n.account()), r.resolve(n.region()));
        let entry = groups
            .entry(format!("{p}/{a}/{reg}"))
            .or_insert_with(|| (p.to_owned(), a.to_owned(), reg.to_owned(), Vec::new()));
        entry.3.push((crn(r, &n), n.id()));
    }
    let side = |count: usize| (count as f64).sqrt().ceil().max(1.0);
    let largest = groups.values().map(|c| c.3.len()).max().unwrap_or(0);
    let cell = side(largest) * NODE_SPACING + CLUSTER_GAP;
    let columns = side(groups.len()) as usize;
    let mut out = Layout {
        nodes: Vec::with_capacity(sel.nodes.len()),
        clusters: Vec::with_capacity(groups.len()),
    };
    for (i, (id, (provider, account, region, mut members))) in groups.into_iter().enumerate() {
        members.sort_unstable();
        let (cx, cy) = ((i % columns) as f64 * cell, (i / columns) as f64 * cell);
        let k = side(members.len()) as usize;
        let extent = k as f64 * NODE_SPACING;
        let node_count = members.len() as u64;
        for (j, (crn, id)) in members.into_iter().enumerate() {
            out.nodes.push(Placed {
                id,
                crn,
                cluster: i,
                x: cx + (j % k) as f64 * NODE_SPACING + NODE_SPACING / 2.0,
                y: cy + (j / k) as f64 * NODE_SPACING + NODE_SPACING / 2.0,
            });
        }
        out.clusters.push(Cluster {
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
    out
}

/// `GET /api/v1/graph/topology?limit=`: `{nodes: [{crn, type, provider,
/// cluster, x, y}], edges: [{source, target, type}], clusters: [{id,
/// provider, account, region, node_count, x, y, width, height}], truncated,
/// total_nodes}`; see [`place`] for the layout.
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
square grid row by row.

**Binary form.** With `Accept: application/x-flatbuffers` (and without
`clusters_only`) the answer is a FlatBuffers `Graph` (SPEC 2.4, schema
`schemas/graph.fbs`, file identifier `SVCG`), content type
`application/x-flatbuffers`, for drawing up to 250,000 nodes (`limit`
default 100,000): the chosen nodes in CRN order, the edges among them
(`relationship` as SPEC 2.3 numbers it), `version` the graph generation
and `last_updated` the Unix seconds of the last commit. Each node's
`properties` hold, in this order: `x` and `y` (its position, decimal
strings in layout units), `cluster` (its cluster's id), `provider`,
`label` (its physical id) and `waste` (`true` or `false`). The
clusters themselves (id, bounds, counts) are not in the binary body:
ask this endpoint for them with `clusters_only=true` (JSON, `nodes` and
`edges` empty) and the same `limit`."#,
    params(GraphTopologyQuery),
    responses(
        (status = 200, description = "The laid-out graph; with `Accept: application/x-flatbuffers`, its binary form.", content(
            (crate::routes::graph::LayoutGraph = "application/json"),
            (crate::openapi::FlatBuffersGraph = "application/x-flatbuffers"),
        )),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn graph_topology(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<GraphTopologyQuery>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let clusters_only = q.clusters_only.0;
    if wants_binary(&headers) && !clusters_only {
        return binary_layout(engine, q.limit.resolve(true)?).await;
    }
    let limit = q.limit.resolve(clusters_only)?;
    let resp = blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        let sel = select(&g, now, limit);
        let r = g.interner().reader();
        let layout = place(&g, &r, &sel);
        if clusters_only {
            return Ok(LayoutGraph {
                clusters: layout.clusters,
                edges: Vec::new(),
                nodes: Vec::new(),
                total_nodes: sel.visible,
                truncated: sel.truncated(),
            });
        }
        let edges = edges_among(&g, &sel, now);
        let nodes = layout
            .nodes
            .into_iter()
            .filter_map(|p| {
                let n = g.node(p.id)?;
                let cluster = layout.clusters.get(p.cluster)?;
                Some(LayoutNode {
                    cluster: cluster.id.clone(),
                    crn: Crn(p.crn),
                    provider: cluster.provider.clone(),
                    ty: r.resolve(n.ty()).to_owned(),
                    x: p.x,
                    y: p.y,
                })
            })
            .collect();
        let edges = edges
            .iter()
            .map(|e| LayoutEdge {
                source: Crn(super::crn_with(&g, &r, e.source())),
                target: Crn(super::crn_with(&g, &r, e.target())),
                ty: e.relation().into(),
            })
            .collect();
        Ok(LayoutGraph {
            clusters: layout.clusters,
            edges,
            nodes,
            total_nodes: sel.visible,
            truncated: sel.truncated(),
        })
    })
    .await?;
    Ok(binary::vary(resp))
}

/// The binary form of both views: built on the blocking pool under one
/// graph read lock.
async fn binary_layout(engine: std::sync::Arc<Engine>, limit: usize) -> ApiResult<Response> {
    let graph = tokio::task::spawn_blocking(move || {
        let now = engine.now_us();
        let last_updated = engine.last_commit_us() / 1_000_000;
        let g = engine.graph();
        let sel = select(&g, now, limit);
        let edges = edges_among(&g, &sel, now);
        let r = g.interner().reader();
        let layout = place(&g, &r, &sel);
        encode_layout(&g, &r, &layout, &edges, last_updated)
    })
    .await
    .map_err(ApiError::internal)?;
    binary::respond(graph)
}

/// Writes the laid-out nodes (in CRN order, [`LAYOUT_KEYS`] as properties)
/// and the edges among them.
fn encode_layout(
    g: &Graph,
    r: &InternerReader<'_>,
    layout: &Layout,
    edges: &[EdgeRef<'_>],
    last_updated: u64,
) -> Finished {
    let bytes: usize = layout
        .nodes
        .iter()
        .map(|p| 2 * p.crn.len() + 8 * 24 + 96)
        .sum::<usize>()
        + edges.len() * 32
        + 1024;
    let mut enc = GraphEncoder::with_capacity(bytes, layout.nodes.len(), edges.len());
    let keys = LAYOUT_KEYS.map(|k| enc.shared(k));
    let mut order: Vec<usize> = (0..layout.nodes.len()).collect();
    order.sort_unstable_by(|&a, &b| layout.nodes[a].crn.cmp(&layout.nodes[b].crn));
    let mut crns: HashMap<NodeId, Str> = HashMap::with_capacity(layout.nodes.len());
    let mut number = String::new();
    let mut num = |enc: &mut GraphEncoder, v: f64| {
        use std::fmt::Write as _;
        number.clear();
        let _ = write!(number, "{v}");
        enc.shared(&number)
    };
    for i in order {
        let (Some(p), Some(n)) = (layout.nodes.get(i), layout.nodes.get(i).and_then(|p| g.node(p.id))) else {
            continue;
        };
        let Some(cluster) = layout.clusters.get(p.cluster) else {
            continue;
        };
        let crn = enc.string(&p.crn);
        crns.insert(p.id, crn);
        let values = [
            num(&mut enc, p.x),
            num(&mut enc, p.y),
            enc.shared(&cluster.id),
            enc.shared(&cluster.provider),
            enc.string(n.physical_id()),
            enc.shared(if n.is_waste() { "true" } else { "false" }),
        ];
        let props: [(Str, Str); 6] = std::array::from_fn(|k| (keys[k], values[k]));
        let ty = enc.shared(r.resolve(n.ty()));
        let state = r.resolve(n.state());
        let state = (!state.is_empty()).then(|| enc.shared(state));
        enc.node(&NodeFields {
            crn,
            ty,
            state,
            cost_usd_mo: finite(n.cost_usd_mo()),
            properties: &props,
            creation_timestamp: n.creation_ts(),
            valid_to: 0,
        });
    }
    for e in edges {
        if let (Some(s), Some(t)) = (crns.get(&e.source()), crns.get(&e.target())) {
            enc.edge(&EdgeFields {
                source_crn: *s,
                target_crn: *t,
                relationship: e.relation() as u8,
                properties: &[],
                valid_to: 0,
            });
        }
    }
    let version = u32::try_from(g.generation()).unwrap_or(u32::MAX);
    enc.finish(version, last_updated)
}

/// A cost as the JSON shows it: not finite reads as 0.
fn finite(v: f32) -> f32 {
    if v.is_finite() { v } else { 0.0 }
}

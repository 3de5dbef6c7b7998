//! The live graph: statistics, node listing and lookup, a node's edges,
//! blast radius, the terminal UI's rows; the topology snapshot and the
//! laid-out views live in the submodules.
//!
//! Every handler reads the graph inside `spawn_blocking` (`blocking`): the
//! read lock is taken and released there, never held across an `.await`,
//! and the JSON body is serialized there too.

mod binary;
mod body;
pub mod breakdown;
mod filter;
pub mod layout;
pub mod rows;
mod sources;
pub mod topology;
pub mod versions;

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use svc_engine::graph::NodeRef;
use svc_engine::intern::InternerReader;
use svc_engine::{Graph, NodeId};

pub use body::*;
pub use layout::{flow_graph, graph_topology};
pub use rows::{RowSort, SortOrder, TuiRowPage, WorkspaceCounts};
pub use topology::topology;

use self::filter::NodeFilter;
use super::query::{Flag, Limit, NodeCursor};
use super::{ApiQuery, find_node};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::{self, Crn, NodeView};

/// Runs `f` on the blocking pool and answers with its value as JSON,
/// serialized there too.
pub(crate) async fn blocking<F, T>(f: F) -> ApiResult<Response>
where
    F: FnOnce() -> ApiResult<T> + Send + 'static,
    T: Serialize,
{
    let body = tokio::task::spawn_blocking(move || {
        let v = f()?;
        serde_json::to_vec(&v).map_err(ApiError::internal)
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(([(header::CONTENT_TYPE, "application/json")], Bytes::from(body)).into_response())
}

/// The text of a `{crn}` path segment (percent-decoded by the router).
pub(crate) fn path_text(path: Result<Path<String>, PathRejection>) -> ApiResult<String> {
    path.map(|Path(s)| s)
        .map_err(|e| ApiError::invalid(format!("invalid crn in path: {}", e.body_text())))
}

/// The graph-form CRN of a node id, resolved under a held reader.
pub(crate) fn crn_with(g: &Graph, r: &InternerReader<'_>, id: NodeId) -> String {
    g.node(id)
        .map(|n| wire::crn_of(r, n.key(), n.physical_id()))
        .unwrap_or_default()
}

// ---------------------------------------------------------------- stats

/// `GET /api/v1/graph/stats` (SPEC 4.2).
#[utoipa::path(
    get,
    path = "/graph/stats",
    operation_id = "getGraphStats",
    tag = "graph",
    summary = "Counts and costs of the live graph.",
    responses(
        (status = 200, description = "Graph statistics.", body = crate::routes::graph::GraphStats, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn stats(State(state): State<AppState>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let findings = engine.findings();
        let g = engine.graph();
        let at = crate::derived::State::of(&engine, &findings);
        let counted = state.inner.derived.get_or_make("graph/stats", &at, || {
            let st = g.stats(now);
            // What acting on the last scan's findings saves (priced from
            // the table where a provider reports no cost); before any
            // scan, the cost of the resources marked waste.
            let savings = if findings.scan_seq > 0 {
                findings.totals().1
            } else {
                st.projected_savings_usd_mo
            };
            (st, savings)
        });
        let (st, savings) = (&counted.0, counted.1);
        let r = g.interner().reader();
        let providers: std::collections::BTreeMap<String, u64> = st
            .providers
            .iter()
            .map(|(p, n)| (r.resolve(*p).to_owned(), *n))
            .collect();
        drop(r);
        drop(g);
        let with_nodes = providers
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(p, _)| p.clone())
            .collect();
        let (simulated, sources) = sources::graph_sources(&state, &engine, &with_nodes);
        Ok(GraphStats {
            active_nodes: st.active_nodes,
            logically_deleted: st.logically_deleted,
            projected_savings_usd_mo: round2(savings),
            providers,
            simulated,
            sources,
            total_cost_usd_mo: round2(st.total_cost_usd_mo),
            total_edges: st.total_edges,
            total_nodes: st.total_nodes,
            waste_nodes: st.waste_nodes,
        })
    })
    .await
}

/// Money sums are reported to the cent.
pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

// ---------------------------------------------------------------- node pages

/// `GET /api/v1/graph/nodes`: a page of nodes.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NodesQuery {
    /// Page size.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 1000>,
    /// Only nodes of this provider (a provider the graph never saw matches nothing).
    provider: Option<String>,
    /// Only nodes of this type (`service:kind`, for example `ec2:volume`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    ty: Option<String>,
    /// Only nodes in this provider-reported state (for example `stopped`).
    state: Option<String>,
    /// Only waste (`true`) or only what is not waste (`false`).
    #[param(value_type = Option<bool>)]
    waste: Option<Flag>,
    /// Only nodes with this tag: `key` (set to anything) or `key=value`.
    tag: Option<String>,
    /// Search: a case-insensitive substring of the CRN or of a tag's `key=value`.
    q: Option<String>,
    /// Opaque cursor, `next_cursor` of a previous response.
    #[param(inline)]
    cursor: Option<NodeCursor>,
    /// Also list logically deleted nodes still held in memory (retired rows are dropped at a start
    /// and once they are an eighth of the rows; `/api/v1/graph/at` has them all). Accepts
    /// `true`/`1`/`yes`, `false`/`0`/`no`; the bare flag means true.
    #[serde(default)]
    #[param(inline)]
    include_deleted: Flag,
}

/// One page request over the nodes, in id order.
struct PageSpec {
    limit: usize,
    filter: NodeFilter,
    after: Option<NodeId>,
    include_deleted: bool,
}

impl PageSpec {
    fn new(limit: usize, filter: NodeFilter, cursor: Option<NodeCursor>, include_deleted: Flag) -> PageSpec {
        PageSpec {
            limit,
            filter,
            after: cursor.map(|c| c.0),
            include_deleted: include_deleted.0,
        }
    }

    /// The key the count of the nodes matching this request is kept
    /// under ([`crate::derived`]): the same for each of its pages.
    fn total_key(&self) -> String {
        format!("graph/nodes total {:?} {}", self.filter, self.include_deleted)
    }

    /// The page, the cursor of the next one, and how many nodes match in
    /// all: `total` is handed the count over the whole graph, to run or to
    /// answer from a count it kept.
    fn run<'g>(
        &self,
        g: &'g Graph,
        now: u64,
        total: impl FnOnce(&mut dyn FnMut() -> u64) -> u64,
    ) -> (Vec<NodeRef<'g>>, Option<String>, u64) {
        // A name the graph never saw matches nothing.
        let Some(filter) = self.filter.resolve(g) else {
            return (Vec::new(), None, 0);
        };
        let r = g.interner().reader();
        let mut buf = String::new();
        let mut matches =
            |n: &NodeRef<'_>| (self.include_deleted || n.is_visible(now)) && filter.matches(n, &r, &mut buf);
        let total = total(&mut || g.nodes().filter(|n| matches(n)).count() as u64);
        let mut page: Vec<NodeRef<'g>> = g
            .nodes_after(self.after)
            .filter(|n| matches(n))
            .take(self.limit + 1)
            .collect();
        let next = if page.len() > self.limit {
            page.truncate(self.limit);
            page.last().map(|n| NodeCursor::encode(n.id()))
        } else {
            None
        };
        (page, next, total)
    }
}

/// `GET /api/v1/graph/nodes?limit=&provider=&cursor=&include_deleted=`:
/// `{nodes, next_cursor, total}`; visible nodes unless `include_deleted`.
#[utoipa::path(
    get,
    path = "/graph/nodes",
    operation_id = "listNodes",
    tag = "graph",
    summary = "One page of nodes, in id order.",
    description = "Visible nodes unless `include_deleted`; follow `next_cursor` to list every matching node once. The filters combine (all must hold); `total` counts the nodes that match them. A provider, type, state or tag the graph never saw matches nothing.",
    params(NodesQuery),
    responses(
        (status = 200, description = "A page of node objects.", body = crate::routes::graph::NodePage, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn list_nodes(State(state): State<AppState>, ApiQuery(q): ApiQuery<NodesQuery>) -> ApiResult<Response> {
    let filter = NodeFilter::new(q.provider, q.ty, q.state, q.waste.map(|w| w.0), q.tag, q.q);
    let spec = PageSpec::new(q.limit.0, filter, q.cursor, q.include_deleted);
    page_of(&state, spec, |page, r, next_cursor, total| NodePage {
        next_cursor,
        nodes: page.iter().map(|n| wire::node(&NodeView::of(n), r)).collect(),
        total,
    })
    .await
}

/// Refuses a cursor from before the graph was compacted: it names a row
/// that may be another node's now, so it is never followed.
pub(crate) fn check_cursor(g: &Graph, after: Option<NodeId>) -> ApiResult<()> {
    if let Some(after) = after
        && g.node_shards()
            .get(after.shard())
            .is_some_and(|s| s.generation != after.generation())
    {
        return Err(ApiError::bad_request(
            "stale cursor: the graph was compacted since it was issued; list again without a cursor",
        ));
    }
    Ok(())
}

/// One page of nodes, rendered by `render` from the page, the cursor of the
/// next one (empty on the last) and how many nodes match in all.
async fn page_of<T: Serialize + 'static>(
    state: &AppState,
    spec: PageSpec,
    render: fn(&[NodeRef<'_>], &InternerReader<'_>, String, u64) -> T,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let state = state.clone();
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        check_cursor(&g, spec.after)?;
        let at = crate::derived::State::of(&engine, &engine.findings());
        let derived = &state.inner.derived;
        let (page, next, total) = spec.run(&g, now, |count| *derived.get_or_make(&spec.total_key(), &at, count));
        let r = g.interner().reader();
        Ok(render(&page, &r, next.unwrap_or_default(), total))
    })
    .await
}

// ---------------------------------------------------------------- one node

/// `GET /api/v1/graph/nodes/{crn}`: the node object plus `edges_out` and
/// `edges_in` (visible edges). A logically deleted node is still returned,
/// with `valid_to` set and no visible edges: it stays in the temporal store.
#[utoipa::path(
    get,
    path = "/graph/nodes/{crn}",
    operation_id = "getNode",
    tag = "graph",
    summary = "One node by CRN, with its visible edge counts.",
    description = "A logically deleted node is still returned, with `valid_to` set and no visible edges.",
    params(("crn" = crate::wire::input::CrnInput, Path, description = crate::openapi::CRN_PATH)),
    responses(
        (status = 200, description = "The node object plus `edges_out` and `edges_in`.", body = crate::wire::NodeDetail, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn get_node(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> ApiResult<Response> {
    let raw = path_text(path)?;
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        let (crn, id) = find_node(&g, &raw)?;
        let n = g
            .node(id)
            .ok_or_else(|| ApiError::not_found(format!("no node with crn {crn}")))?;
        let edges_out = n.out_edges().filter(|e| g.is_edge_visible(e.id(), now)).count();
        let edges_in = n.in_edges().filter(|e| g.is_edge_visible(e.id(), now)).count();
        let r = g.interner().reader();
        let node = wire::node(&NodeView::of(&n), &r);
        let findings = engine.findings().of(id).iter().map(wire::finding).collect();
        Ok(wire::NodeDetail::new(node, edges_in as u64, edges_out as u64, findings))
    })
    .await
}

/// `GET /api/v1/graph/nodes/{crn}/edges`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EdgesQuery {
    /// Most edges listed in each direction.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<1000, 10_000>,
}

/// `GET /api/v1/graph/blast-radius/{crn}`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlastQuery {
    /// Most affected nodes listed.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 10_000>,
}

/// `GET /api/v1/graph/nodes/{crn}/edges?limit=`: `{crn, outgoing, incoming,
/// outgoing_total, incoming_total, truncated}`, visible edges only; each list
/// holds at most `limit` (default 1000, max 10000) edges.
#[utoipa::path(
    get,
    path = "/graph/nodes/{crn}/edges",
    operation_id = "getNodeEdges",
    tag = "graph",
    summary = "A node's visible edges, both ways.",
    params(("crn" = crate::wire::input::CrnInput, Path, description = crate::openapi::CRN_PATH), EdgesQuery),
    responses(
        (status = 200, description = "Outgoing and incoming edges, each list capped at `limit`.", body = crate::routes::graph::NodeEdges, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn node_edges(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    ApiQuery(q): ApiQuery<EdgesQuery>,
) -> ApiResult<Response> {
    let raw = path_text(path)?;
    let limit = q.limit.0;
    let engine = state.engine()?.clone();
    blocking(move || {
        let now = engine.now_us();
        let g = engine.graph();
        let (_, id) = find_node(&g, &raw)?;
        let n = g
            .node(id)
            .ok_or_else(|| ApiError::not_found(format!("no node with crn {raw}")))?;
        let out: Vec<_> = n.out_edges().filter(|e| g.is_edge_visible(e.id(), now)).collect();
        let inc: Vec<_> = n.in_edges().filter(|e| g.is_edge_visible(e.id(), now)).collect();
        let r = g.interner().reader();
        let me = wire::crn_of(&r, n.key(), n.physical_id());
        let render = |e: &svc_engine::graph::EdgeRef<'_>| {
            wire::edge(
                crn_with(&g, &r, e.source()),
                crn_with(&g, &r, e.target()),
                e.relation(),
                e.inferred(),
                e.props(),
                &r,
            )
        };
        Ok(NodeEdges {
            crn: Crn(me),
            incoming: inc.iter().take(limit).map(render).collect(),
            incoming_total: inc.len() as u64,
            outgoing: out.iter().take(limit).map(render).collect(),
            outgoing_total: out.len() as u64,
            truncated: out.len() > limit || inc.len() > limit,
        })
    })
    .await
}

/// `GET /api/v1/graph/blast-radius/{crn}?limit=`: `{crn, affected_count,
/// total_cost_usd_mo, max_depth, truncated, affected: [{crn, type, depth,
/// via_crn, relation, cost_usd_mo}]}`; `limit` (default 100, max 10000) caps
/// the listing, never the count or the cost.
#[utoipa::path(
    get,
    path = "/graph/blast-radius/{crn}",
    operation_id = "getBlastRadius",
    tag = "graph",
    summary = "The resources affected by removing a node.",
    description = "`limit` caps the listing, never `affected_count` or `total_cost_usd_mo`.",
    params(("crn" = crate::wire::input::CrnInput, Path, description = crate::openapi::CRN_PATH), BlastQuery),
    responses(
        (status = 200, description = "The blast radius.", body = crate::routes::graph::BlastRadius, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn blast_radius(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    ApiQuery(q): ApiQuery<BlastQuery>,
) -> ApiResult<Response> {
    let raw = path_text(path)?;
    let limit = q.limit.0;
    let engine = state.engine()?.clone();
    blocking(move || {
        let g = engine.graph();
        let (crn, id) = find_node(&g, &raw)?;
        let b = svc_engine::blast::blast_radius(&g, id, limit)
            .ok_or_else(|| ApiError::not_found(format!("no node with crn {crn}")))?;
        let r = g.interner().reader();
        let affected = b
            .affected
            .iter()
            .filter_map(|a| {
                let n = g.node(a.id)?;
                Some(AffectedNode {
                    cost_usd_mo: wire::f32_value(n.cost_usd_mo()),
                    crn: Crn(wire::crn_of(&r, n.key(), n.physical_id())),
                    depth: a.depth,
                    relation: a.relation.into(),
                    ty: r.resolve(n.ty()).to_owned(),
                    via_crn: Crn(crn_with(&g, &r, a.via)),
                })
            })
            .collect();
        Ok(BlastRadius {
            affected,
            affected_count: b.count as u64,
            crn: Crn(crn_with(&g, &r, id)),
            max_depth: b.max_depth,
            total_cost_usd_mo: round2(b.total_cost_usd_mo),
            truncated: b.truncated,
        })
    })
    .await
}

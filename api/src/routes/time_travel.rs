//! Time travel: the graph as it was at a time, and what changed between two
//! times. Both read node and edge versions from the graph store
//! (`graph.redb`), on the blocking pool; the live graph is not touched.

use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use svc_engine::graph::{EdgeVersion, NodeVersion};
use svc_engine::intern::InternerReader;
use svc_engine::store::graph_store::edge_order;
use utoipa::ToSchema;

use super::graph::blocking;
use super::query::{CrnCursor, Limit, Time, required_time};
use super::{ApiQuery, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::{self, Crn, Node, NodeView};

/// Page size (graph/at) or most entries per list (graph/diff).
type TimeTravelLimit = Limit<1000, 10_000>;

/// `GET /api/v1/graph/at`: one page of the graph as it was.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphAt {
    pub edges: Vec<wire::EdgeVersion>,
    /// Cursor of the next page; empty on the last page.
    pub next_cursor: String,
    pub nodes: Vec<Node>,
    pub total_edges: u64,
    pub total_nodes: u64,
    #[schema(format = DateTime)]
    pub ts: String,
}

/// A node that changed between the two times.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeChange {
    pub after: Node,
    pub before: Node,
    pub crn: Crn,
    /// Names of the node-object fields that differ, leaving out `valid_from` and `valid_to`.
    pub fields: Vec<String>,
}

/// An edge that changed between the two times.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EdgeChange {
    pub after: wire::EdgeVersion,
    pub before: wire::EdgeVersion,
}

/// How many of each change there are, also beyond `limit`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffCounts {
    pub added: u64,
    pub changed: u64,
    pub edges_added: u64,
    pub edges_changed: u64,
    pub edges_removed: u64,
    pub removed: u64,
}

/// `GET /api/v1/graph/diff`: what changed between two times.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphDiff {
    pub added: Vec<Node>,
    pub changed: Vec<NodeChange>,
    pub counts: DiffCounts,
    pub edges_added: Vec<wire::EdgeVersion>,
    pub edges_changed: Vec<EdgeChange>,
    pub edges_removed: Vec<wire::EdgeVersion>,
    #[schema(format = DateTime)]
    pub from: String,
    pub removed: Vec<Node>,
    #[schema(format = DateTime)]
    pub to: String,
    pub truncated: bool,
}

fn node_json(v: &NodeVersion, r: &InternerReader<'_>) -> Node {
    wire::node_with_crn(&NodeView::of_row(&v.row), v.crn.clone(), r)
}

/// `GET /api/v1/graph/at`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AtQuery {
    /// RFC 3339 time. A `+` of a UTC offset that arrived unescaped (decoded as a space) is accepted.
    #[param(inline, required = true)]
    ts: Option<Time>,
    /// Page size (graph/at) or most entries per list (graph/diff).
    #[serde(default)]
    #[param(inline)]
    limit: TimeTravelLimit,
    /// Opaque cursor, `next_cursor` of a previous response.
    #[param(inline)]
    cursor: Option<CrnCursor>,
}

/// `GET /api/v1/graph/at?ts=RFC3339&limit=&cursor=`: the graph as it was at
/// `ts`: `{ts, nodes, edges, total_nodes, total_edges, next_cursor}`.
///
/// Nodes are sorted by CRN and paged (`limit` default 1000, max 10000); a
/// page carries the edges whose source is one of its nodes (the last page
/// also any edge whose source was not live), sorted by (source, target,
/// type), so following `next_cursor` lists every node and edge once. The
/// totals count the whole graph at `ts`.
#[utoipa::path(
    get,
    path = "/graph/at",
    operation_id = "getGraphAt",
    tag = "time-travel",
    summary = "The graph as it was at a time.",
    description = r#"Nodes are sorted by CRN and paged; a page carries the edges whose
source is one of its nodes (the last page also any edge whose source
was not live), sorted by (source, target, type). Following
`next_cursor` lists every node and edge once; the totals count the
whole graph at `ts`. A `ts` before the history kept
(`graph.history_retention`) is a 410 `before_retention` naming the
earliest time available."#,
    params(AtQuery),
    responses(
        (status = 200, description = "One page of the graph at `ts`.", body = crate::routes::time_travel::GraphAt, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 410, response = crate::openapi::BeforeRetention),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn graph_at(State(state): State<AppState>, ApiQuery(q): ApiQuery<AtQuery>) -> ApiResult<Response> {
    let ts = required_time(q.ts, "ts")?;
    let limit = q.limit.0;
    let after = q.cursor.map(|c| c.0);
    let engine = state.engine()?.clone();
    blocking(move || {
        let page = engine.store().graph_at_page(ts, after.as_deref(), limit)?;
        let mut edges: Vec<&EdgeVersion> = page.edges.iter().collect();
        edges.sort_by(|a, b| edge_order(a, b));
        let r = engine.interner().reader();
        Ok(GraphAt {
            edges: edges.iter().map(|e| wire::edge_version(e, &r)).collect(),
            next_cursor: page.next.as_deref().map(CrnCursor::encode).unwrap_or_default(),
            nodes: page.nodes.iter().map(|n| node_json(n, &r)).collect(),
            total_edges: page.total_edges,
            total_nodes: page.total_nodes,
            ts: rfc3339(ts),
        })
    })
    .await
}

/// `GET /api/v1/graph/diff`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffQuery {
    /// RFC 3339 time (an unescaped `+` is accepted).
    #[param(inline, required = true)]
    from: Option<Time>,
    /// RFC 3339 time, not before `from` (an unescaped `+` is accepted).
    #[param(inline, required = true)]
    to: Option<Time>,
    /// Page size (graph/at) or most entries per list (graph/diff).
    #[serde(default)]
    #[param(inline)]
    limit: TimeTravelLimit,
}

/// Fields of the node object that are version bookkeeping, not content.
const VERSION_FIELDS: [&str; 2] = ["valid_from", "valid_to"];

/// Names of the node-object fields that differ between two versions.
fn changed_fields(before: &Node, after: &Node) -> Vec<String> {
    match (serde_json::to_value(before), serde_json::to_value(after)) {
        (Ok(b), Ok(a)) => changed_keys(&b, &a),
        _ => Vec::new(),
    }
}

/// Keys whose values differ between two JSON objects.
fn changed_keys(before: &Value, after: &Value) -> Vec<String> {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return Vec::new();
    };
    let mut keys: Vec<&String> = b
        .keys()
        .chain(a.keys())
        .filter(|k| !VERSION_FIELDS.contains(&k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().filter(|k| b.get(*k) != a.get(*k)).cloned().collect()
}

/// `GET /api/v1/graph/diff?from=RFC3339&to=RFC3339&limit=`: what changed
/// from `from` to `to`: `{from, to, added: [node], removed: [node], changed:
/// [{crn, before, after, fields}], edges_added, edges_removed, edges_changed:
/// [{before, after}], counts: {added, removed, changed, edges_added,
/// edges_removed, edges_changed}, truncated}`. Each list holds at most
/// `limit` entries (default 1000, max 10000); `counts` are complete.
/// `fields` names the changed fields of the node object, leaving out
/// `valid_from` and `valid_to`.
#[utoipa::path(
    get,
    path = "/graph/diff",
    operation_id = "getGraphDiff",
    tag = "time-travel",
    summary = "What changed between two times.",
    description = r#"Each list holds at most `limit` entries; `counts` are complete and
`truncated` tells whether any list was cut. `from` after `to` is a 400;
a time before the history kept (`graph.history_retention`) is a 410
`before_retention` naming the earliest time available."#,
    params(DiffQuery),
    responses(
        (status = 200, description = "The difference.", body = crate::routes::time_travel::GraphDiff, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 410, response = crate::openapi::BeforeRetention),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn graph_diff(State(state): State<AppState>, ApiQuery(q): ApiQuery<DiffQuery>) -> ApiResult<Response> {
    let from = required_time(q.from, "from")?;
    let to = required_time(q.to, "to")?;
    if from > to {
        return Err(ApiError::bad_request(format!(
            "invalid range: from {} is after to {}",
            rfc3339(from),
            rfc3339(to)
        )));
    }
    let limit = q.limit.0;
    let engine = state.engine()?.clone();
    blocking(move || {
        // Each list holds its first `limit` entries, nodes by CRN, edges
        // in `edge_order`; the counts are of the whole lists.
        let (d, n) = engine.store().diff_limited(from, to, limit)?;
        let r = engine.interner().reader();
        let nodes = |list: &[NodeVersion]| -> Vec<Node> { list.iter().map(|n| node_json(n, &r)).collect() };
        let edges = |list: &[EdgeVersion]| -> Vec<wire::EdgeVersion> {
            list.iter().map(|e| wire::edge_version(e, &r)).collect()
        };
        let changed = d
            .changed
            .iter()
            .map(|(b, a)| {
                let (before, after) = (node_json(b, &r), node_json(a, &r));
                let fields = changed_fields(&before, &after);
                NodeChange {
                    after,
                    before,
                    crn: Crn(a.crn.clone()),
                    fields,
                }
            })
            .collect();
        let edges_changed = d
            .edges_changed
            .iter()
            .map(|(b, a)| EdgeChange {
                after: wire::edge_version(a, &r),
                before: wire::edge_version(b, &r),
            })
            .collect();
        Ok(GraphDiff {
            added: nodes(&d.added),
            changed,
            counts: DiffCounts {
                added: n.added,
                changed: n.changed,
                edges_added: n.edges_added,
                edges_changed: n.edges_changed,
                edges_removed: n.edges_removed,
                removed: n.removed,
            },
            edges_added: edges(&d.edges_added),
            edges_changed,
            edges_removed: edges(&d.edges_removed),
            from: rfc3339(from),
            removed: nodes(&d.removed),
            to: rfc3339(to),
            truncated: n.longest() > limit as u64,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changed_fields_leave_out_version_bookkeeping() {
        let a = json!({"crn": "x", "state": "running", "valid_from": "a", "valid_to": 0, "cost_usd_mo": 1.0});
        let b = json!({"crn": "x", "state": "stopped", "valid_from": "b", "valid_to": 5, "cost_usd_mo": 1.0});
        assert_eq!(changed_keys(&a, &b), vec!["state".to_owned()]);
    }
}

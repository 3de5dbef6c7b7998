//! Time travel: the graph as it was at a time, and what changed between two
//! times. Both read node and edge versions from the graph store
//! (`graph.redb`), on the blocking pool; the live graph is not touched.

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use svc_engine::graph::{EdgeVersion, NodeVersion};
use svc_engine::intern::InternerReader;

use super::graph::blocking;
use super::query::{CrnCursor, Limit, Time, required_time};
use super::{ApiQuery, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::{self, NodeView};

/// Page size (graph/at) or most entries per list (graph/diff).
type TimeTravelLimit = Limit<1000, 10_000>;

fn node_json(v: &NodeVersion, r: &InternerReader<'_>) -> Value {
    wire::node_with_crn(&NodeView::of_row(&v.row), v.crn.clone(), r)
}

fn edge_order(a: &EdgeVersion, b: &EdgeVersion) -> std::cmp::Ordering {
    (&a.src, &a.dst, a.relation.name()).cmp(&(&b.src, &b.dst, b.relation.name()))
}

/// `GET /api/v1/graph/at`.
#[derive(Deserialize)]
pub struct AtQuery {
    /// The time to show the graph at.
    ts: Option<Time>,
    /// Page size.
    #[serde(default)]
    limit: TimeTravelLimit,
    /// Opaque cursor, `next_cursor` of a previous response.
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
pub async fn graph_at(State(state): State<AppState>, ApiQuery(q): ApiQuery<AtQuery>) -> ApiResult<Response> {
    let ts = required_time(q.ts, "ts")?;
    let limit = q.limit.0;
    let after = q.cursor.map(|c| c.0);
    let engine = state.engine()?.clone();
    blocking(move || {
        let at = engine.store().graph_at(ts)?;
        let mut nodes = at.nodes;
        nodes.sort_by(|a, b| a.crn.cmp(&b.crn));
        let start = after
            .as_deref()
            .map_or(0, |c| nodes.partition_point(|n| n.crn.as_str() <= c));
        let end = start.saturating_add(limit).min(nodes.len());
        let page = &nodes[start..end];
        let upper = (end < nodes.len())
            .then(|| page.last().map(|n| n.crn.as_str()))
            .flatten();
        let mut edges: Vec<&EdgeVersion> = at
            .edges
            .iter()
            .filter(|e| {
                after.as_deref().is_none_or(|c| e.src.as_str() > c) && upper.is_none_or(|u| e.src.as_str() <= u)
            })
            .collect();
        edges.sort_by(|a, b| edge_order(a, b));
        let r = engine.interner().reader();
        let nodes_json: Vec<Value> = page.iter().map(|n| node_json(n, &r)).collect();
        let edges_json: Vec<Value> = edges.iter().map(|e| wire::edge_version(e, &r)).collect();
        Ok(json!({
            "ts": rfc3339(ts),
            "nodes": nodes_json,
            "edges": edges_json,
            "total_nodes": nodes.len(),
            "total_edges": at.edges.len(),
            "next_cursor": upper.map(CrnCursor::encode).unwrap_or_default(),
        }))
    })
    .await
}

/// `GET /api/v1/graph/diff`.
#[derive(Deserialize)]
pub struct DiffQuery {
    /// The earlier time.
    from: Option<Time>,
    /// The later time.
    to: Option<Time>,
    /// Most entries per list.
    #[serde(default)]
    limit: TimeTravelLimit,
}

/// Fields of the node object that are version bookkeeping, not content.
const VERSION_FIELDS: [&str; 2] = ["valid_from", "valid_to"];

/// Names of the node-object fields that differ between two versions.
fn changed_fields(before: &Value, after: &Value) -> Vec<String> {
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
        let d = engine.store().diff(from, to)?;
        let r = engine.interner().reader();
        let nodes =
            |list: &[NodeVersion]| -> Vec<Value> { list.iter().take(limit).map(|n| node_json(n, &r)).collect() };
        let edges = |list: &[EdgeVersion]| -> Vec<Value> {
            let mut sorted: Vec<&EdgeVersion> = list.iter().collect();
            sorted.sort_by(|a, b| edge_order(a, b));
            sorted
                .into_iter()
                .take(limit)
                .map(|e| wire::edge_version(e, &r))
                .collect()
        };
        let changed: Vec<Value> = d
            .changed
            .iter()
            .take(limit)
            .map(|(b, a)| {
                let (before, after) = (node_json(b, &r), node_json(a, &r));
                let fields = changed_fields(&before, &after);
                json!({ "crn": a.crn, "before": before, "after": after, "fields": fields })
            })
            .collect();
        let edges_changed: Vec<Value> = d
            .edges_changed
            .iter()
            .take(limit)
            .map(|(b, a)| json!({ "before": wire::edge_version(b, &r), "after": wire::edge_version(a, &r) }))
            .collect();
        let counts = json!({
            "added": d.added.len(),
            "removed": d.removed.len(),
            "changed": d.changed.len(),
            "edges_added": d.edges_added.len(),
            "edges_removed": d.edges_removed.len(),
            "edges_changed": d.edges_changed.len(),
        });
        let longest = [
            d.added.len(),
            d.removed.len(),
            d.changed.len(),
            d.edges_added.len(),
            d.edges_removed.len(),
            d.edges_changed.len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        Ok(json!({
            "from": rfc3339(from),
            "to": rfc3339(to),
            "added": nodes(&d.added),
            "removed": nodes(&d.removed),
            "changed": changed,
            "edges_added": edges(&d.edges_added),
            "edges_removed": edges(&d.edges_removed),
            "edges_changed": edges_changed,
            "counts": counts,
            "truncated": longest > limit,
        }))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_fields_leave_out_version_bookkeeping() {
        let a = json!({"crn": "x", "state": "running", "valid_from": "a", "valid_to": 0, "cost_usd_mo": 1.0});
        let b = json!({"crn": "x", "state": "stopped", "valid_from": "b", "valid_to": 5, "cost_usd_mo": 1.0});
        assert_eq!(changed_fields(&a, &b), vec!["state".to_owned()]);
    }
}

//! Formal verification, read back: `GET /api/v1/solver/results` (the
//! reachability analysis of the last scan with its confidence, and the
//! nodes it judged, riskiest first) and `GET /api/v1/oracle/{crn}` (one
//! resource: its reachability with the proof path, the parts of its removal
//! risk, and the spot-interruption estimate of a spot machine).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use svc_engine::analysis::reach::{self, Via};
use svc_engine::graph::Reachability;

use super::graph::{blocking, crn_with, path_text};
use super::query::{Limit, MinRisk, ReachabilityFilter};
use super::{ApiQuery, find_node, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire;

/// Query parameters of `GET /api/v1/solver/results`.
#[derive(Deserialize)]
pub struct ResultsQuery {
    /// Only nodes with this reachability.
    reachability: Option<ReachabilityFilter>,
    /// Only nodes whose risk is at least this.
    #[serde(default)]
    min_risk: MinRisk,
    /// Nodes listed.
    #[serde(default)]
    limit: Limit<100, 1000>,
}

/// `GET /api/v1/solver/results`.
pub async fn results(State(state): State<AppState>, ApiQuery(q): ApiQuery<ResultsQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = q.limit.0;
    let only = q.reachability.map(|r| r.0);
    let min_risk = q.min_risk.0;
    blocking(move || {
        let now = engine.now_us();
        let a = engine.assessment();
        let links = engine.links();
        let g = engine.graph();
        let r = g.interner().reader();
        // Counts from the graph, so they hold after a restart too.
        let (mut counts, mut matched) = ([0u64; 3], 0u64);
        let mut listed: Vec<(f32, svc_engine::NodeId)> = Vec::new();
        for n in g.nodes().filter(|n| n.is_visible(now)) {
            let reach = n.reachability();
            counts[reach as usize] += 1;
            if only.is_some_and(|o| o != reach) || n.risk_score() < min_risk {
                continue;
            }
            matched += 1;
            listed.push((n.risk_score(), n.id()));
        }
        listed.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        listed.truncate(limit);
        let nodes: Vec<Value> = listed
            .iter()
            .filter_map(|&(_, id)| {
                let n = g.node(id)?;
                let hops = match a.via(id) {
                    Via::Edge(_) => Some(a.proof(&g, id).len()),
                    Via::Entry => Some(0),
                    Via::None => None,
                };
                Some(json!({
                    "crn": crn_with(&g, &r, id),
                    "type": r.resolve(n.ty()),
                    "reachability": n.reachability().name(),
                    "risk_score": wire::f32_value(n.risk_score()),
                    "is_waste": n.is_waste(),
                    "entry_point": a.via(id) == Via::Entry,
                    "proof_hops": hops,
                    "cost_usd_mo": wire::f32_value(n.cost_usd_mo()),
                }))
            })
            .collect();
        let reachable = counts[Reachability::Reachable as usize];
        let unreachable = counts[Reachability::Unreachable as usize];
        let unknown = counts[Reachability::Unknown as usize];
        let total = reachable + unreachable + unknown;
        let confidence = if total == 0 {
            0.0
        } else {
            (reachable + unreachable) as f64 / total as f64
        };
        let rules: Vec<Value> = links
            .rules
            .iter()
            .map(|s| json!({"rule": s.rule, "matched": s.matched, "reported": s.reported}))
            .collect();
        Ok(json!({
            "enabled": a.enabled && engine.oracle_enabled(),
            "scan_seq": a.scan_seq,
            "computed_at": (a.computed_us > 0).then(|| rfc3339(a.computed_us)),
            "duration_ms": a.duration_ms,
            "entry_points": a.entry_points,
            "reachable": reachable,
            "unreachable": unreachable,
            "unknown": unknown,
            "confidence": (confidence * 10_000.0).round() / 10_000.0,
            "spot_machines": a.spot_machines,
            "high_risk": a.high_risk,
            "failed_providers": a.failed_providers,
            "ghost_linker": {
                "added": links.added,
                "retired": links.retired,
                "rules": rules,
            },
            "matched": matched,
            "nodes": nodes,
        }))
    })
    .await
}

/// `GET /api/v1/oracle/{crn}`.
pub async fn oracle(State(state): State<AppState>, path: Result<Path<String>, PathRejection>) -> ApiResult<Response> {
    let raw = path_text(path)?;
    let engine = state.engine()?.clone();
    blocking(move || {
        let a = engine.assessment();
        let g = engine.graph();
        let (crn, id) = find_node(&g, &raw)?;
        let n = g
            .node(id)
            .ok_or_else(|| ApiError::not_found(format!("no node with crn {crn}")))?;
        let r = g.interner().reader();
        let reach = n.reachability();
        let proof: Vec<Value> = a
            .proof(&g, id)
            .into_iter()
            .filter_map(|(e, from, to)| {
                let edge = g.edge(e)?;
                Some(json!({
                    "from": crn_with(&g, &r, from),
                    "to": crn_with(&g, &r, to),
                    "source_crn": crn_with(&g, &r, edge.source()),
                    "target_crn": crn_with(&g, &r, edge.target()),
                    "relation": edge.relation().name(),
                    "inferred": edge.inferred(),
                }))
            })
            .collect();
        let entry_crn = match a.via(id) {
            Via::Entry => Some(crn_with(&g, &r, id)),
            Via::Edge(_) => proof.first().and_then(|s| s["from"].as_str().map(str::to_owned)),
            Via::None => None,
        };
        // A node not in the adjacency index (logically deleted) has no parts.
        let (parts, spot, entry) = reach::explain(&g, id, reach).unwrap_or_default();
        let risk = json!({
            "dependents": parts.dependents,
            "blast_radius": parts.blast,
            "reachability": parts.reachability,
            "cost": parts.cost,
            "stateful": parts.stateful,
            "entry_point": parts.entry,
            "spot": parts.spot,
            "total": parts.total,
        });
        let spot = spot.map(|s| {
            json!({
                "interruption_band": s.band,
                "interruption_frequency": s.frequency,
                "interruption_score": s.score,
                "machine_type": s.machine_type,
                "basis": s.basis,
            })
        });
        Ok(json!({
            "crn": crn_with(&g, &r, id),
            "type": r.resolve(n.ty()),
            "visible": n.is_visible(engine.now_us()),
            "enabled": a.enabled && engine.oracle_enabled(),
            "scan_seq": a.scan_seq,
            "reachability": reach.name(),
            "risk_score": wire::f32_value(n.risk_score()),
            "risk": risk,
            "entry_point": entry,
            "entry_crn": entry_crn,
            "proof": proof,
            "spot": spot,
            "is_waste": n.is_waste(),
            "verdict": n.verdict().map(|v| r.resolve(v).to_owned()),
        }))
    })
    .await
}

//! Formal verification, read back: `GET /api/v1/solver/results` (the
//! reachability analysis of the last scan with its confidence, and the
//! nodes it judged, riskiest first) and `GET /api/v1/oracle/{crn}` (one
//! resource: its reachability with the proof path, the parts of its removal
//! risk, and the spot-interruption estimate of a spot machine).

mod body;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use svc_engine::analysis::reach::{self, Via};
use svc_engine::graph::Reachability;

use super::graph::{blocking, crn_with, path_text};
use super::query::{Limit, MinRisk, ReachabilityFilter};
use super::{ApiQuery, find_node, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::{self, Crn};
pub use body::*;

/// Query parameters of `GET /api/v1/solver/results`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResultsQuery {
    /// Only nodes with this reachability.
    #[param(inline)]
    reachability: Option<ReachabilityFilter>,
    /// Only nodes whose removal risk is at least this.
    #[serde(default)]
    #[param(inline)]
    min_risk: MinRisk,
    /// Nodes listed.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 1000>,
}

/// `GET /api/v1/solver/results`.
#[utoipa::path(
    get,
    path = "/solver/results",
    operation_id = "getSolverResults",
    tag = "verification",
    summary = "Reachability analysis of the last scan, its confidence, and the nodes it judged, riskiest first.",
    description = "Counts are read from the live graph (they hold across a restart). `confidence` is the share of live nodes with a definite answer (`reachable` or `unreachable`); `unknown` nodes belong to, or are joined to, a provider whose scan failed. `nodes` lists the nodes that pass the filters, by removal risk, highest first.",
    params(ResultsQuery),
    responses(
        (status = 200, description = "The results.", body = crate::routes::solver::SolverResults, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
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
        let nodes = listed
            .iter()
            .filter_map(|&(_, id)| {
                let n = g.node(id)?;
                let hops = match a.via(id) {
                    Via::Edge(_) => Some(a.proof(&g, id).len()),
                    Via::Entry => Some(0),
                    Via::None => None,
                };
                Some(SolverNode {
                    cost_usd_mo: wire::f32_value(n.cost_usd_mo()),
                    crn: Crn(crn_with(&g, &r, id)),
                    entry_point: a.via(id) == Via::Entry,
                    is_waste: n.is_waste(),
                    proof_hops: hops,
                    reachability: n.reachability().into(),
                    risk_score: wire::f32_value(n.risk_score()),
                    ty: r.resolve(n.ty()).to_owned(),
                })
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
        let rules = links
            .rules
            .iter()
            .map(|s| LinkRuleStats {
                matched: s.matched,
                reported: s.reported,
                rule: LinkRule::from(s.rule),
            })
            .collect();
        Ok(SolverResults {
            computed_at: (a.computed_us > 0).then(|| rfc3339(a.computed_us)),
            confidence: (confidence * 10_000.0).round() / 10_000.0,
            duration_ms: a.duration_ms,
            enabled: a.enabled && engine.oracle_enabled(),
            entry_points: a.entry_points,
            failed_providers: a.failed_providers.clone(),
            ghost_linker: GhostLinker {
                added: links.added,
                retired: links.retired,
                rules,
            },
            high_risk: a.high_risk,
            matched,
            nodes,
            reachable,
            scan_seq: a.scan_seq,
            spot_machines: a.spot_machines,
            unknown,
            unreachable,
        })
    })
    .await
}

/// `GET /api/v1/oracle/{crn}`.
#[utoipa::path(
    get,
    path = "/oracle/{crn}",
    operation_id = "getOracle",
    tag = "verification",
    summary = "Formal verification of one resource.",
    description = "Its reachability with the proof path (the chain of edges from an entry point that makes it reachable, entry point first), the parts of its removal risk, and, for a spot or preemptible machine, the estimated interruption band.",
    params(("crn" = crate::wire::input::CrnInput, Path, description = crate::openapi::CRN_PATH)),
    responses(
        (status = 200, description = "The verdict and its proof.", body = crate::routes::solver::OracleResult, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
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
        let proof: Vec<ProofStep> = a
            .proof(&g, id)
            .into_iter()
            .filter_map(|(e, from, to)| {
                let edge = g.edge(e)?;
                Some(ProofStep {
                    from: Crn(crn_with(&g, &r, from)),
                    inferred: edge.inferred(),
                    relation: edge.relation().into(),
                    source_crn: Crn(crn_with(&g, &r, edge.source())),
                    target_crn: Crn(crn_with(&g, &r, edge.target())),
                    to: Crn(crn_with(&g, &r, to)),
                })
            })
            .collect();
        let entry_crn = match a.via(id) {
            Via::Entry => Some(Crn(crn_with(&g, &r, id))),
            Via::Edge(_) => proof.first().map(|s| s.from.clone()),
            Via::None => None,
        };
        // A node not in the adjacency index (logically deleted) has no parts.
        let (parts, spot, entry) = reach::explain(&g, id, reach).unwrap_or_default();
        Ok(OracleResult {
            crn: Crn(crn_with(&g, &r, id)),
            enabled: a.enabled && engine.oracle_enabled(),
            entry_crn,
            entry_point: entry,
            is_waste: n.is_waste(),
            proof,
            reachability: reach.into(),
            risk: RiskParts::from(&parts),
            risk_score: wire::f32_value(n.risk_score()),
            scan_seq: a.scan_seq,
            spot: spot.map(SpotEstimate::from),
            ty: r.resolve(n.ty()).to_owned(),
            verdict: n.verdict().map(|v| r.resolve(v).to_owned()),
            visible: n.is_visible(engine.now_us()),
        })
    })
    .await
}

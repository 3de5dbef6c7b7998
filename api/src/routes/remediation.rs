//! The remediation pipeline (SPEC 3.1, 3.4, 3.5): the queue by stage,
//! operator decisions on frozen plans (`approve`, `reject`, `move`,
//! `bulk`, `override`), the plan of one resource, quarantine and revert,
//! and the ignore list. Every decision names the plan hash the operator
//! saw; a plan that changed since is a 409.

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use svc_engine::remediation::ops::SagaOutcome;
use svc_engine::remediation::{Isolation, Item, RemediationError, stage_named};

use super::graph::blocking;
use super::query::{Limit, StageFilter};
use super::{ApiJson, ApiQuery};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

fn api_error(e: RemediationError) -> ApiError {
    match e {
        RemediationError::NotFound(m) => ApiError::not_found(m),
        RemediationError::Conflict(m) | RemediationError::LockTimeout(m) => ApiError::conflict(m),
        RemediationError::Invalid(m) => ApiError::invalid(m),
        other => ApiError::internal(other),
    }
}

fn us_to_s(us: u64) -> u64 {
    us / 1_000_000
}

pub(crate) fn item_json(i: &Item) -> Value {
    json!({
        "crn": i.crn,
        "stage": if i.rejected.is_some() { "rejected" } else { i.stage.name() },
        "type": i.ty,
        "state": i.state,
        "rule": i.rule,
        "action": i.action,
        "reason": i.reason,
        "plan_hash": i.plan_hash,
        "savings_usd_mo": (i.savings_usd_mo * 100.0).round() / 100.0,
        "risk_score": i.risk_score,
        "reachability": i.reachability,
        "blast_radius": i.blast_radius,
        "proof": i.proof.as_ref().map(|p| json!({"safe": p.safe, "reason": p.reason, "source": p.source})),
        "blockers": i.blockers,
        "held_by": i.held_by,
        "override": i.override_by.as_ref().map(|o| json!({"actor": o.actor, "reason": o.reason, "plan_hash": o.plan_hash})),
        "failure": i.failure,
        "rejected": i.rejected,
        "saga_id": i.saga_id,
        "flagged_at": us_to_s(i.flagged_us),
        "stage_since": us_to_s(i.stage_us),
    })
}

fn saga_json(o: &SagaOutcome) -> Value {
    json!({
        "crn": o.crn,
        "saga_id": o.saga_id,
        "applied": o.applied,
        "stage": o.stage.name(),
        "failure": o.failure,
        "steps": o.steps.iter().enumerate().map(|(i, s)| json!({
            "index": i, "action": s.action, "inverse": s.inverse, "status": s.status,
            "compensating_payload_hash": s.payload_hash,
        })).collect::<Vec<_>>(),
    })
}

fn isolation_json(i: &Isolation) -> Value {
    json!({
        "crn": i.crn,
        "author_identifier": i.author,
        "reason_code": i.reason_code,
        "ttl_seconds": i.ttl_seconds,
        "created_at": us_to_s(i.created_us),
        "expires_at": i.expires_us().map(us_to_s),
    })
}

fn actor(a: &Option<String>) -> String {
    a.as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .unwrap_or("api")
        .to_owned()
}

/// Query parameters of `GET /api/v1/remediation/queue`; any other is refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueQuery {
    /// List only this stage's items (the others' lists are empty; counts and savings stay complete).
    stage: Option<StageFilter>,
    /// Most items listed per stage.
    #[serde(default)]
    limit: Limit<100, 1000>,
}

/// `GET /api/v1/remediation/queue`: every stage with its items (up to
/// `limit` each, oldest in the stage first), counts and savings.
pub async fn queue(State(state): State<AppState>, ApiQuery(q): ApiQuery<QueueQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = q.limit.0;
    let only = q.stage;
    blocking(move || {
        let parts = engine.remediation_queue(limit).map_err(api_error)?;
        let mut stages = serde_json::Map::new();
        let mut counts = serde_json::Map::new();
        let mut savings = serde_json::Map::new();
        for part in parts {
            let wanted = match only {
                None => true,
                Some(StageFilter::Rejected) => part.name == "rejected",
                Some(StageFilter::Stage(p)) => part.name == p.name(),
            };
            counts.insert(part.name.to_owned(), part.count.into());
            let total = part.savings_usd_mo + 0.0;
            savings.insert(part.name.to_owned(), ((total * 100.0).round() / 100.0).into());
            let listed: Vec<Value> = if wanted {
                part.oldest.iter().map(item_json).collect()
            } else {
                Vec::new()
            };
            stages.insert(part.name.to_owned(), Value::Array(listed));
        }
        Ok(json!({"stages": stages, "counts": counts, "savings_usd_mo": savings, "limit": limit}))
    })
    .await
}

/// Query parameters of `GET /api/v1/plan`; any other is refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanQuery {
    /// The resource whose plan to show.
    crn: String,
}

/// `GET /api/v1/plan?crn=`: the steps, inverses, CLI and Terraform text.
pub async fn plan(State(state): State<AppState>, ApiQuery(q): ApiQuery<PlanQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let item = engine.remediation_item(&q.crn).map_err(api_error)?;
        let p = engine.remediation_plan(&q.crn).map_err(api_error)?;
        Ok(json!({
            "crn": p.crn,
            "rule": p.rule,
            "intent": p.intent,
            "stage": item.stage.name(),
            "plan_hash": p.hash,
            "steps": p.steps.iter().enumerate().map(|(i, s)| json!({
                "index": i, "action": s.action, "inverse": s.inverse, "cli": s.cli,
            })).collect::<Vec<_>>(),
            "cli": p.steps.iter().map(|s| s.cli.clone()).collect::<Vec<_>>(),
            "terraform": p.terraform,
            "savings_usd_mo": (item.savings_usd_mo * 100.0).round() / 100.0,
            "blast_radius": item.blast_radius,
        }))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    crn: String,
    plan_hash: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    actor: Option<String>,
}

/// `POST /api/v1/remediation/approve`: approves and runs the saga.
pub async fn approve(State(state): State<AppState>, ApiJson(b): ApiJson<Decision>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let outcome = engine
            .approve(&b.crn, &b.plan_hash, &actor(&b.actor))
            .map_err(api_error)?;
        Ok(saga_json(&outcome))
    })
    .await
}

/// `POST /api/v1/remediation/reject`.
pub async fn reject(State(state): State<AppState>, ApiJson(b): ApiJson<Decision>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let reason = b.reason.clone().unwrap_or_default();
        let item = engine
            .reject(&b.crn, &b.plan_hash, &actor(&b.actor), &reason)
            .map_err(api_error)?;
        Ok(item_json(&item))
    })
    .await
}

/// `POST /api/v1/remediation/override`: break-glass past `sau_gate`.
pub async fn override_gate(State(state): State<AppState>, ApiJson(b): ApiJson<Decision>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let reason = b.reason.clone().unwrap_or_default();
        let item = engine
            .override_gate(&b.crn, &b.plan_hash, &actor(&b.actor), &reason)
            .map_err(api_error)?;
        Ok(item_json(&item))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveBody {
    crn: String,
    plan_hash: String,
    to: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    actor: Option<String>,
}

/// `POST /api/v1/remediation/move`: legal moves only, 409 otherwise.
pub async fn move_item(State(state): State<AppState>, ApiJson(b): ApiJson<MoveBody>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let to = stage_named(&b.to).ok_or_else(|| {
        ApiError::bad_request(format!(
            "unknown stage {:?}: expected one of flagged, analyzed, codegen, sau_gate, pending, applied",
            b.to
        ))
    })?;
    blocking(move || {
        let reason = b.reason.clone().unwrap_or_default();
        let item = engine
            .move_item(&b.crn, &b.plan_hash, to, &actor(&b.actor), &reason)
            .map_err(api_error)?;
        Ok(item_json(&item))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkItem {
    crn: String,
    plan_hash: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkBody {
    action: String,
    items: Vec<BulkItem>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    actor: Option<String>,
}

/// Items one bulk request may name.
pub const MAX_BULK: usize = 1000;

/// `POST /api/v1/remediation/bulk`: approve or reject many, with a result per item.
pub async fn bulk(State(state): State<AppState>, ApiJson(b): ApiJson<BulkBody>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    if b.action != "approve" && b.action != "reject" {
        return Err(ApiError::bad_request(format!(
            "unknown bulk action {:?}: expected approve or reject",
            b.action
        )));
    }
    if b.items.is_empty() || b.items.len() > MAX_BULK {
        return Err(ApiError::bad_request(format!(
            "items must name 1 to {MAX_BULK} resources, not {}",
            b.items.len()
        )));
    }
    blocking(move || {
        let who = actor(&b.actor);
        let reason = b.reason.clone().unwrap_or_default();
        let mut ok = 0;
        let results: Vec<Value> = b
            .items
            .iter()
            .map(|it| {
                let r = if b.action == "approve" {
                    engine.approve(&it.crn, &it.plan_hash, &who).map(|o| {
                        let applied = o.applied;
                        (saga_json(&o), applied)
                    })
                } else {
                    engine
                        .reject(&it.crn, &it.plan_hash, &who, &reason)
                        .map(|i| (item_json(&i), true))
                };
                match r {
                    Ok((v, done)) => {
                        ok += usize::from(done);
                        json!({"crn": it.crn, "ok": done, "status": 200, "result": v})
                    }
                    Err(e) => {
                        let err = api_error(e);
                        json!({"crn": it.crn, "ok": false, "status": err.status.as_u16(), "error": err.message})
                    }
                }
            })
            .collect();
        Ok(json!({"action": b.action, "succeeded": ok, "failed": results.len() - ok, "results": results}))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuarantineBody {
    crn: String,
    action: String,
    reason: String,
    #[serde(default)]
    actor: Option<String>,
}

/// `POST /api/v1/remediation/quarantine`.
pub async fn quarantine(State(state): State<AppState>, ApiJson(b): ApiJson<QuarantineBody>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let hash = engine
            .quarantine(&b.crn, &b.action, &b.reason, &actor(&b.actor))
            .map_err(api_error)?;
        Ok(json!({"crn": b.crn, "action": b.action, "compensating_payload_hash": hash}))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevertBody {
    hash: String,
    #[serde(default)]
    actor: Option<String>,
}

/// `POST /api/v1/remediation/revert`: undoes a quarantine or a committed step by its payload hash.
pub async fn revert(State(state): State<AppState>, ApiJson(b): ApiJson<RevertBody>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let p = engine.revert(&b.hash, &actor(&b.actor)).map_err(api_error)?;
        Ok(json!({
            "crn": p.crn, "kind": p.kind, "reverted": p.applied, "action": p.inverse,
            "compensating_payload_hash": b.hash.trim().to_ascii_lowercase(),
        }))
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationBody {
    crn: String,
    reason_code: String,
    ttl_seconds: u64,
    #[serde(default)]
    actor: Option<String>,
}

/// `POST /api/v1/isolation`: adds a resource to the ignore list.
pub async fn isolate(State(state): State<AppState>, ApiJson(b): ApiJson<IsolationBody>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let entry = engine
            .isolate(&b.crn, &b.reason_code, b.ttl_seconds, &actor(&b.actor))
            .map_err(api_error)?;
        Ok(isolation_json(&entry))
    })
    .await
}

/// `GET /api/v1/isolation`: the ignore list.
pub async fn isolations(State(state): State<AppState>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let list: Vec<Value> = engine.isolations().iter().map(isolation_json).collect();
        Ok(json!({"count": list.len(), "entries": list}))
    })
    .await
}

/// `DELETE /api/v1/isolation/{crn}`.
pub async fn remove_isolation(State(state): State<AppState>, Path(crn): Path<String>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let entry = engine.remove_isolation(&crn, "api").map_err(api_error)?;
        Ok(isolation_json(&entry))
    })
    .await
}

//! The remediation pipeline (SPEC 3.1, 3.4, 3.5): the queue by stage,
//! operator decisions on frozen plans (`approve`, `reject`, `move`,
//! `bulk`, `override`), the plan of one resource, quarantine and revert,
//! and the ignore list. Every decision names the plan hash the operator
//! saw; a plan that changed since is a 409.

mod body;
mod request;

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use svc_engine::remediation::{RemediationError, stage_named};

pub use body::*;
pub use request::*;

use super::graph::blocking;
use super::query::{Limit, StageFilter};
use super::{ApiJson, ApiQuery};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
pub use crate::wire::input::{MAX_ACTOR_CHARS, MAX_TEXT_CHARS};

fn api_error(e: RemediationError) -> ApiError {
    match e {
        RemediationError::NotFound(m) => ApiError::not_found(m),
        RemediationError::Conflict(m) | RemediationError::LockTimeout(m) => ApiError::conflict(m),
        RemediationError::LockLost(m) => ApiError::not_ready(m),
        RemediationError::Invalid(m) => ApiError::invalid(m),
        RemediationError::Store(e) => e.into(),
        RemediationError::Ledger(e) => e.into(),
    }
}

/// Characters that reorder or hide text when it is printed: bidirectional
/// marks, embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text that goes into the ledger as the client sent it: at most `max`
/// characters, no control character (but the line breaks and tabs
/// `allowed`) and no bidirectional control, so a record prints as what it
/// says. 422 `invalid` naming the field and the position otherwise.
pub(crate) fn checked<'a>(field: &str, text: &'a str, max: usize, allowed: &[char]) -> Result<&'a str, ApiError> {
    let chars = text.chars().count();
    if chars > max {
        return Err(ApiError::invalid(format!(
            "{field} is {chars} characters long; at most {max} are accepted"
        )));
    }
    if let Some((i, c)) = text
        .chars()
        .enumerate()
        .find(|(_, c)| (c.is_control() && !allowed.contains(c)) || is_bidi_control(*c))
    {
        return Err(ApiError::invalid(format!(
            "{field} holds the control character U+{:04X} at character {i}; it is not accepted",
            u32::from(c)
        )));
    }
    Ok(text)
}

/// Who the client says decides, from a body's `actor`: checked, and kept
/// only as a note. The ledger's actor is the caller's token name.
fn note(a: &Option<String>) -> Result<Option<String>, ApiError> {
    let Some(a) = a.as_deref().map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(None);
    };
    checked("actor", a, MAX_ACTOR_CHARS, &[]).map(|a| Some(a.to_owned()))
}

/// `reason` with the note of a body's `actor` appended, as
/// `<reason> (actor note: <actor>)`, when the note says something the
/// token name does not.
fn noted(reason: String, note: Option<String>, caller: &Caller) -> String {
    match note {
        Some(n) if n != caller.name && reason.is_empty() => format!("(actor note: {n})"),
        Some(n) if n != caller.name => format!("{reason} (actor note: {n})"),
        _ => reason,
    }
}

/// A reason or reason code, checked as [`checked`] says.
fn free_text(field: &str, text: Option<&str>) -> Result<String, ApiError> {
    checked(field, text.unwrap_or_default(), MAX_TEXT_CHARS, &['\n', '\t']).map(str::to_owned)
}

/// Query parameters of `GET /api/v1/remediation/queue`; any other is refused.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct QueueQuery {
    /// List only this stage (`rejected` lists rejected items); the counts cover every stage.
    #[param(inline)]
    stage: Option<StageFilter>,
    /// Items listed per stage.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 1000>,
}

/// `GET /api/v1/remediation/queue`: every stage with its items (up to
/// `limit` each, oldest in the stage first), counts and savings.
#[utoipa::path(
    get,
    path = "/remediation/queue",
    operation_id = "getRemediationQueue",
    tag = "remediation",
    summary = "The remediation pipeline by stage (SPEC 3.1), each stage listing up to `limit` items, longest in the stage first.",
    params(QueueQuery),
    responses(
        (status = 200, description = "Every stage with its items, counts and savings.", body = crate::routes::remediation::RemediationQueue, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn queue(State(state): State<AppState>, ApiQuery(q): ApiQuery<QueueQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = q.limit.0;
    let only = q.stage;
    blocking(move || {
        let parts = engine.remediation_queue(limit).map_err(api_error)?;
        RemediationQueue::new(parts, limit, |name| match only {
            None => true,
            Some(StageFilter::Rejected) => name == "rejected",
            Some(StageFilter::Stage(p)) => name == p.name(),
        })
    })
    .await
}

/// Query parameters of `GET /api/v1/plan`; any other is refused.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PlanQuery {
    /// The resource whose plan to show.
    #[param(value_type = crate::wire::input::CrnInput)]
    crn: String,
}

/// `GET /api/v1/plan?crn=`: the steps, inverses, CLI and Terraform text.
#[utoipa::path(
    get,
    path = "/plan",
    operation_id = "getPlan",
    tag = "remediation",
    summary = "The plan of one resource in the pipeline: ordered steps with their inverses, the equivalent CLI commands and a Terraform-style diff.",
    params(PlanQuery),
    responses(
        (status = 200, description = "The plan.", body = crate::routes::remediation::RemediationPlan, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn plan(State(state): State<AppState>, ApiQuery(q): ApiQuery<PlanQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let current = crate::routes::iac::current(&state, &engine).await;
    blocking(move || {
        let item = engine.remediation_item(&q.crn).map_err(api_error)?;
        let p = engine.remediation_plan(&q.crn).map_err(api_error)?;
        let mut plan = RemediationPlan::new(&item, p);
        if current.configured() {
            let index = crate::iac::index(&state.inner.derived, &engine, &current);
            if let Some(e) = index.get(&plan.crn) {
                plan.declared_by(&current, e);
            }
        }
        Ok(plan)
    })
    .await
}

/// `POST /api/v1/remediation/approve`: approves and runs the saga.
#[utoipa::path(
    post,
    path = "/remediation/approve",
    operation_id = "approveRemediation",
    tag = "remediation",
    summary = "Approve a pending item for the plan the operator saw, and run its saga (dry run, then each step; compensated on failure).",
    request_body(content = crate::routes::remediation::Decision),
    responses(
        (status = 200, description = "How the saga ended.", body = crate::routes::remediation::SagaOutcome, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<Decision>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        // An approval records no reason: a body's actor is checked and dropped.
        note(&b.actor)?;
        let outcome = engine.approve(&b.crn, &b.plan_hash, &caller.name).map_err(api_error)?;
        Ok(SagaOutcome::from(&outcome))
    })
    .await
}

/// `POST /api/v1/remediation/reject`.
#[utoipa::path(
    post,
    path = "/remediation/reject",
    operation_id = "rejectRemediation",
    tag = "remediation",
    summary = "Reject an item: it leaves the queue while its plan is unchanged (REJECTION event).",
    request_body(content = crate::routes::remediation::Decision),
    responses(
        (status = 200, description = "The item as it now is.", body = crate::routes::remediation::RemediationItem, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn reject(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<Decision>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let reason = noted(free_text("reason", b.reason.as_deref())?, note(&b.actor)?, &caller);
        let item = engine
            .reject(&b.crn, &b.plan_hash, &caller.name, &reason)
            .map_err(api_error)?;
        Ok(RemediationItem::from(&item))
    })
    .await
}

/// `POST /api/v1/remediation/override`: break-glass past `sau_gate`.
#[utoipa::path(
    post,
    path = "/remediation/override",
    operation_id = "overrideRemediationGate",
    tag = "remediation",
    summary = "Break-glass: let one item past `sau_gate` for its current plan, with a reason (`s.a.u_OVERRIDE` event).",
    request_body(content = crate::routes::remediation::OverrideDecision),
    responses(
        (status = 200, description = "The item as it now is.", body = crate::routes::remediation::RemediationItem, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn override_gate(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<OverrideDecision>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        // Blank is refused by the engine before any note is added.
        let reason = free_text("reason", b.reason.as_deref())?;
        let reason = if reason.trim().is_empty() {
            reason
        } else {
            noted(reason, note(&b.actor)?, &caller)
        };
        let item = engine
            .override_gate(&b.crn, &b.plan_hash, &caller.name, &reason)
            .map_err(api_error)?;
        Ok(RemediationItem::from(&item))
    })
    .await
}

/// `POST /api/v1/remediation/move`: legal moves only, 409 otherwise.
#[utoipa::path(
    post,
    path = "/remediation/move",
    operation_id = "moveRemediation",
    tag = "remediation",
    summary = "Move an item between stages: `pending -> sau_gate` (hold), `sau_gate -> pending` (release a hold), any stage but `applied` back to `flagged`; anything else is a 409.",
    request_body(content = crate::routes::remediation::MoveBody),
    responses(
        (status = 200, description = "The item as it now is.", body = crate::routes::remediation::RemediationItem, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn move_item(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<MoveBody>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let to = stage_named(&b.to).ok_or_else(|| {
        ApiError::bad_request(format!(
            "unknown stage {:?}: expected one of flagged, analyzed, codegen, sau_gate, pending, applied",
            b.to
        ))
    })?;
    blocking(move || {
        let reason = noted(free_text("reason", b.reason.as_deref())?, note(&b.actor)?, &caller);
        let item = engine
            .move_item(&b.crn, &b.plan_hash, to, &caller.name, &reason)
            .map_err(api_error)?;
        Ok(RemediationItem::from(&item))
    })
    .await
}

/// Items one bulk request may name.
pub const MAX_BULK: usize = 1000;

/// `POST /api/v1/remediation/bulk`: approve or reject many, with a result per item.
#[utoipa::path(
    post,
    path = "/remediation/bulk",
    operation_id = "bulkRemediation",
    tag = "remediation",
    summary = "Approve or reject up to 1000 items, with a result per item.",
    request_body(content = crate::routes::remediation::BulkBody),
    responses(
        (status = 200, description = "One result per item, in request order.", body = crate::routes::remediation::BulkResult, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn bulk(State(state): State<AppState>, caller: Caller, ApiJson(b): ApiJson<BulkBody>) -> ApiResult<Response> {
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
        let who = caller.name.clone();
        let reason = noted(free_text("reason", b.reason.as_deref())?, note(&b.actor)?, &caller);
        let mut ok = 0;
        let results: Vec<BulkItemResult> = b
            .items
            .iter()
            .map(|it| {
                let r = if b.action == "approve" {
                    engine.approve(&it.crn, &it.plan_hash, &who).map(|o| {
                        let applied = o.applied;
                        (BulkOutcome::Saga(SagaOutcome::from(&o)), applied)
                    })
                } else {
                    engine
                        .reject(&it.crn, &it.plan_hash, &who, &reason)
                        .map(|i| (BulkOutcome::Item(Box::new(RemediationItem::from(&i))), true))
                };
                match r {
                    Ok((v, done)) => {
                        ok += usize::from(done);
                        BulkItemResult {
                            crn: it.crn.clone(),
                            error: None,
                            ok: done,
                            result: Some(v),
                            status: 200,
                        }
                    }
                    Err(e) => {
                        let err = api_error(e);
                        BulkItemResult {
                            crn: it.crn.clone(),
                            error: Some(err.message),
                            ok: false,
                            result: None,
                            status: err.status.as_u16(),
                        }
                    }
                }
            })
            .collect();
        Ok(BulkResult {
            failed: results.len() - ok,
            succeeded: ok,
            results,
            action: b.action,
        })
    })
    .await
}

/// `POST /api/v1/remediation/quarantine`.
#[utoipa::path(
    post,
    path = "/remediation/quarantine",
    operation_id = "quarantineResource",
    tag = "remediation",
    summary = "Quarantine a resource through its plugin (`ApplyQuarantine`); the inverse is stored by its SHA-256 (QUARANTINE event).",
    request_body(content = crate::routes::remediation::QuarantineRequest),
    responses(
        (status = 200, description = "The stored inverse.", body = crate::routes::remediation::QuarantineResult, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn quarantine(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<QuarantineRequest>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let reason = noted(free_text("reason", Some(&b.reason))?, note(&b.actor)?, &caller);
        let hash = engine
            .quarantine(&b.crn, &b.action, &reason, &caller.name)
            .map_err(api_error)?;
        Ok(QuarantineResult {
            action: b.action,
            compensating_payload_hash: hash,
            crn: b.crn,
        })
    })
    .await
}

/// `POST /api/v1/remediation/revert`: undoes a quarantine or a committed step by its payload hash.
#[utoipa::path(
    post,
    path = "/remediation/revert",
    operation_id = "revertByHash",
    tag = "remediation",
    summary = "Undo a quarantine or a committed saga step by the hash of its compensating payload, once.",
    request_body(content = crate::routes::remediation::RevertRequest),
    responses(
        (status = 200, description = "What was undone.", body = crate::routes::remediation::RevertResult, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn revert(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<RevertRequest>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        // A revert records no reason: a body's actor is checked and dropped.
        note(&b.actor)?;
        let p = engine.revert(&b.hash, &caller.name).map_err(api_error)?;
        Ok(RevertResult::new(p, &b.hash))
    })
    .await
}

/// `POST /api/v1/isolation`: adds a resource to the ignore list.
#[utoipa::path(
    post,
    path = "/isolation",
    operation_id = "addIsolation",
    tag = "remediation",
    summary = "Add a resource to the ignore list; `ttl_seconds` 0 is permanent, others expire by themselves (ISOLATION event).",
    request_body(content = crate::routes::remediation::IsolationRequest),
    responses(
        (status = 200, description = "The entry.", body = crate::routes::remediation::Isolation, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn isolate(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<IsolationRequest>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        note(&b.actor)?;
        // A reason code is matched by what reads it: the note is not added.
        let entry = engine
            .isolate(
                &b.crn,
                &free_text("reason_code", Some(&b.reason_code))?,
                b.ttl_seconds,
                &caller.name,
            )
            .map_err(api_error)?;
        Ok(Isolation::from(&entry))
    })
    .await
}

/// `GET /api/v1/isolation`: the ignore list.
#[utoipa::path(
    get,
    path = "/isolation",
    operation_id = "listIsolation",
    tag = "remediation",
    summary = "The ignore list (SPEC 3.5).",
    responses(
        (status = 200, description = "Every entry.", body = crate::routes::remediation::IsolationList, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn isolations(State(state): State<AppState>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let entries: Vec<Isolation> = engine.isolations().iter().map(Isolation::from).collect();
        Ok(IsolationList {
            count: entries.len(),
            entries,
        })
    })
    .await
}

/// `DELETE /api/v1/isolation/{crn}`.
#[utoipa::path(
    delete,
    path = "/isolation/{crn}",
    operation_id = "removeIsolation",
    tag = "remediation",
    summary = "Remove a resource from the ignore list (ISOLATION event).",
    params(("crn" = crate::wire::input::CrnInput, Path, description = crate::openapi::CRN_PATH)),
    responses(
        (status = 200, description = "The removed entry.", body = crate::routes::remediation::Isolation, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn remove_isolation(
    State(state): State<AppState>,
    caller: Caller,
    Path(crn): Path<String>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    blocking(move || {
        let entry = engine.remove_isolation(&crn, &caller.name).map_err(api_error)?;
        Ok(Isolation::from(&entry))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Role;

    #[test]
    fn a_body_actor_is_a_note_on_the_reason() {
        let caller = Caller {
            name: "ops".into(),
            role: Role::Operator,
            session: None,
            csrf: None,
        };
        let n = |a: &str| note(&Some(a.to_owned())).unwrap();
        assert_eq!(
            noted("too old".into(), n("alice"), &caller),
            "too old (actor note: alice)"
        );
        assert_eq!(noted(String::new(), n("alice"), &caller), "(actor note: alice)");
        assert_eq!(
            noted("too old".into(), n("ops"), &caller),
            "too old",
            "the token name adds nothing"
        );
        assert_eq!(noted("too old".into(), n("  "), &caller), "too old");
        assert_eq!(noted("too old".into(), None, &caller), "too old");
        assert!(note(&Some("a\u{202e}b".to_owned())).is_err());
    }
}

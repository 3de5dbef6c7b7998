//! The policy endpoints (SPEC 4.3, 4.4): add, list, remove, toggle,
//! reorder, dry-run, and the mesh of rules with what they last did.
//!
//! Every change is blocking store and ledger I/O (and a compile) and runs on
//! the blocking pool. The author recorded on `POLICY_CHANGE` is the
//! caller's token name.

mod body;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::json;
use svc_engine::policy::{Action, Mode, PolicyError, RuleSpec, compile};

pub use body::*;

use super::ApiJson;
use super::graph::blocking;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Matching CRNs a dry-run returns by default, and at most.
pub const DRY_RUN_DEFAULT_LIMIT: usize = 1000;
pub const DRY_RUN_MAX_LIMIT: usize = 100_000;

fn error(e: PolicyError) -> ApiError {
    match e {
        PolicyError::Invalid {
            index,
            id,
            message,
            line,
            column,
        } => {
            let mut details = json!({"rule_id": id});
            if let Some(i) = index {
                details["index"] = json!(i);
            }
            if line > 0 {
                details["line"] = json!(line);
                details["column"] = json!(column);
            }
            let text = if line > 0 {
                format!("rule {id:?}: {message} at line {line}, column {column}")
            } else if id.is_empty() {
                message
            } else {
                format!("rule {id:?}: {message}")
            };
            ApiError::invalid(text).with_details(details)
        }
        e @ (PolicyError::Duplicate(_) | PolicyError::FromPack { .. }) => ApiError::conflict(e.to_string()),
        e @ PolicyError::NotFound(_) => ApiError::not_found(e.to_string()),
        PolicyError::Store(e) => e.into(),
        PolicyError::Ledger(e) => e.into(),
    }
}

fn spec(i: usize, b: RuleBody) -> ApiResult<RuleSpec> {
    let bad = |m: String| ApiError::invalid(m).with_details(json!({"index": i, "rule_id": b.id}));
    let action = Action::parse(&b.action).ok_or_else(|| {
        bad(format!(
            "rule {:?}: unknown action {:?}; expected block, flag or warn",
            b.id, b.action
        ))
    })?;
    let mode = match b.mode.as_deref() {
        None => Mode::Enforcing,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            bad(format!(
                "rule {:?}: unknown mode {m:?}; expected enforcing or shadow",
                b.id
            ))
        })?,
    };
    Ok(RuleSpec {
        id: b.id,
        condition: b.condition,
        action,
        message: b.message,
        mode,
    })
}

/// `POST /api/v1/policies`: adds rules, all or none.
#[utoipa::path(
    post,
    path = "/policies",
    operation_id = "addPolicies",
    tag = "policies",
    summary = "Add CEL rules to the running daemon, all or none; each is compiled once and appends a POLICY_CHANGE event (ADDED).",
    description = "A rule is `enforcing` unless `mode` is `shadow`. A condition that does not compile is a 422 whose message and `details` (`index`, `rule_id`, `line`, `column`) say where; an id that exists is a 409. Bounds on a condition are listed in the README (4096 bytes, 16 levels of brackets, 256 operators, a cost of at most 5000000 per resource, counted from the largest sizes `tags` and `props` can have: comprehensions cost per element).",
    request_body(content = crate::routes::policies::AddBody),
    responses(
        (status = 200, description = "The added rules.", body = crate::routes::policies::PolicyAddResponse, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 409, response = crate::openapi::Conflict),
        (status = 422, response = crate::openapi::Invalid),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<AddBody>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    if body.rules.is_empty() {
        return Err(ApiError::invalid("rules is empty"));
    }
    let specs: Vec<RuleSpec> = body
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, b)| spec(i, b))
        .collect::<ApiResult<_>>()?;
    let author = caller.name;
    blocking(move || {
        let added = engine.add_policies(&specs, &author).map_err(error)?;
        let rules = engine.policies().rules();
        let added: Vec<PolicyRule> = added
            .iter()
            .map(|a| {
                let p = rules.iter().position(|r| r.spec.id == a.spec.id).unwrap_or(0);
                PolicyRule::new(a, p)
            })
            .collect();
        Ok(PolicyAddResponse {
            added: added.len(),
            rules: added,
        })
    })
    .await
}

/// `GET /api/v1/policies`: every rule in priority order.
#[utoipa::path(
    get,
    path = "/policies",
    operation_id = "listPolicies",
    tag = "policies",
    summary = "Every policy rule (SPEC 2.7) in priority order, API and pack rules together.",
    responses(
        (status = 200, description = "The rules, highest priority first.", body = crate::routes::policies::PolicyList, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn list(State(state): State<AppState>) -> ApiResult<Json<PolicyList>> {
    let engine = state.engine()?;
    let rules = engine.policies().rules();
    Ok(Json(rule_list(&rules)))
}

/// Rules in priority order.
fn rule_list(rules: &[svc_engine::policy::Rule]) -> PolicyList {
    let rules: Vec<PolicyRule> = rules.iter().enumerate().map(|(i, r)| PolicyRule::new(r, i)).collect();
    PolicyList {
        count: rules.len(),
        rules,
    }
}

/// `DELETE /api/v1/policies/{id}`.
#[utoipa::path(
    delete,
    path = "/policies/{id}",
    operation_id = "removePolicy",
    tag = "policies",
    summary = "Remove a rule added through the API; appends POLICY_CHANGE (REMOVED). Pack rules change with their pack (409).",
    params(("id" = inline(crate::wire::input::RuleRefInput), Path, description = "The rule's id; a pack's rules are `<pack>/<id>`.")),
    responses(
        (status = 200, description = "The removed rule.", body = crate::routes::policies::PolicyRemoved, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 409, response = crate::openapi::Conflict),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn remove(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let author = caller.name;
    blocking(move || {
        let r = engine.remove_policy(&id, &author).map_err(error)?;
        Ok(PolicyRemoved {
            removed: PolicyRule::new(&r, 0),
        })
    })
    .await
}

/// `POST /api/v1/policies/toggle`: enforcing <-> shadow (SPEC 3.2).
#[utoipa::path(
    post,
    path = "/policies/toggle",
    operation_id = "togglePolicy",
    tag = "policies",
    summary = "Switch a rule between enforcing and shadow (SPEC 3.2); appends POLICY_CHANGE (TOGGLED).",
    request_body(content = crate::routes::policies::ToggleBody),
    responses(
        (status = 200, description = "The rule as it now is.", body = crate::routes::policies::PolicyRule, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn toggle(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ToggleBody>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let author = caller.name;
    blocking(move || {
        let r = engine.toggle_policy(&body.rule_id, &author).map_err(error)?;
        let p = engine
            .policies()
            .rules()
            .iter()
            .position(|x| x.spec.id == r.spec.id)
            .unwrap_or(0);
        Ok(PolicyRule::new(&r, p))
    })
    .await
}

/// `POST /api/v1/policies/reorder`: the named rules first, in that order.
#[utoipa::path(
    post,
    path = "/policies/reorder",
    operation_id = "reorderPolicies",
    tag = "policies",
    summary = "Set evaluation priorities; the rules named come first in that order, the others follow in their previous order. Appends POLICY_CHANGE (REORDERED).",
    request_body(content = crate::routes::policies::ReorderBody),
    responses(
        (status = 200, description = "Every rule in its new order.", body = crate::routes::policies::PolicyList, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn reorder(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ReorderBody>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let author = caller.name;
    blocking(move || {
        let rules = engine.reorder_policies(&body.order, &author).map_err(error)?;
        Ok(rule_list(&rules))
    })
    .await
}

/// `POST /api/v1/policies/dry-run`: one condition against the live graph;
/// nothing is stored.
#[utoipa::path(
    post,
    path = "/policies/dry-run",
    operation_id = "dryRunPolicy",
    tag = "policies",
    summary = "Evaluate one CEL condition against the live graph without persisting anything.",
    description = "The condition is compiled as a rule would be (422 when it does not) and evaluated on every visible resource. When it reads no binding of a resource (`now` aside), `value` is its one value written in CEL, or `value_error` why evaluating it failed.",
    request_body(content = crate::routes::policies::DryRunBody),
    responses(
        (status = 200, description = "What the condition matches now.", body = crate::routes::policies::PolicyDryRun, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 422, response = crate::openapi::Invalid),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn dry_run(State(state): State<AppState>, ApiJson(body): ApiJson<DryRunBody>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let limit = match body.limit {
        None => DRY_RUN_DEFAULT_LIMIT,
        Some(n) if (1..=DRY_RUN_MAX_LIMIT).contains(&n) => n,
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "invalid limit {n}: expected an integer from 1 to {DRY_RUN_MAX_LIMIT}"
            )));
        }
    };
    blocking(move || {
        let compiled = compile::compile(&body.condition).map_err(|e| {
            let mut details = json!({});
            if e.line > 0 {
                details = json!({"line": e.line, "column": e.column});
            }
            ApiError::invalid(format!("invalid condition: {e}")).with_details(details)
        })?;
        let r = svc_engine::policy::dry_run(&engine, &compiled, limit);
        let (value, value_error) = match r.value {
            None => (None, None),
            Some(Ok(v)) => (Some(v), None),
            Some(Err(e)) => (None, Some(e)),
        };
        Ok(PolicyDryRun {
            value,
            value_error,
            condition: body.condition,
            count: r.count,
            truncated: (r.crns.len() as u64) < r.count,
            crns: r.crns,
            duration_ms: r.duration_us as f64 / 1000.0,
            error_samples: r
                .error_samples
                .into_iter()
                .map(|(crn, message)| PolicyEvaluationError { crn, message })
                .collect(),
            errors: r.errors,
            evaluation: Evaluation::of(r.fast),
            nodes_evaluated: r.nodes,
        })
    })
    .await
}

/// `GET /api/v1/policies/mesh`: every rule with its mode, action and what
/// its last evaluation found.
#[utoipa::path(
    get,
    path = "/policies/mesh",
    operation_id = "policyMesh",
    tag = "policies",
    summary = "Every rule with its mode, action, trigger count, error count and last evaluation.",
    responses(
        (status = 200, description = "The rules with what they last did.", body = crate::routes::policies::PolicyMesh, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn mesh(State(state): State<AppState>) -> ApiResult<Json<PolicyMesh>> {
    let engine = state.engine()?;
    let rules = engine.policies().rules();
    let last = engine.policies().last_evaluation();
    let policies: Vec<PolicyMeshEntry> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| PolicyMeshEntry::new(r, i, last.by_rule.get(&r.spec.id)))
        .collect();
    Ok(Json(PolicyMesh {
        count: policies.len(),
        last_pass: PolicyMeshPass {
            duration_ms: last.duration_us as f64 / 1000.0,
            nodes: last.nodes,
        },
        policies,
    }))
}

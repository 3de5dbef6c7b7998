//! Infrastructure as code: `GET /api/v1/drift/report` and
//! `GET /api/v1/provenance` (the plan's code change is in
//! `routes::remediation`).

mod body;

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
pub use body::{
    AttributeDriftBody, ChangedResource, CodeChangeBody, DriftReport, DriftState, DriftTotals, GoneResource,
    ProvenanceAnswer, UnmanagedResource,
};
use serde::Deserialize;
use svc_engine::Engine;
use svc_iac::change;
use svc_iac::drift::{Entry, Live};

use super::graph::blocking;
use super::query::{ApiQuery, Limit};
use crate::error::{ApiError, ApiResult};
use crate::iac::{Current, provenance_of, source_of};
use crate::state::AppState;

/// The configured states and repository as they are now.
pub(crate) async fn current(state: &AppState, engine: &Engine) -> Arc<Current> {
    let config = state.config().map(|c| c.get()).unwrap_or_default();
    state.inner.iac.current(&config, engine.data_dir()).await
}

/// Query parameters of `GET /api/v1/drift/report`; any other is refused.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DriftQuery {
    /// Resources listed in each of `gone`, `changed` and `unmanaged`; the totals count them all.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<500, 10000>,
    /// Only this resource: its drift, and where it is declared (`provenance`).
    #[param(value_type = Option<crate::wire::input::CrnInput>)]
    crn: Option<String>,
}

/// `GET /api/v1/drift/report`.
#[utoipa::path(
    get,
    path = "/drift/report",
    operation_id = "getDriftReport",
    tag = "iac",
    summary = "Where the live estate differs from the Terraform states of `iac.terraform_states`: declared but gone, changed attributes, and live resources no state declares.",
    description = r#"Each managed resource instance of each state is matched to its node by the CRN its
attributes give (ARN, region, project, subscription), else by provider, type and physical id.
`gone` lists declared resources with no live node (with the code change that removes them
from the configuration, and whether svc's own remediation removed them); `changed` lists
resources whose live attributes or tags differ from the state, for the attributes the plugin
reports; `unmanaged` lists live resources of types Terraform declares, in accounts a state
covers, that no state declares (most expensive first). A declared resource in an account no
scan reports counts in `outside_scans` and is not called gone. A state that cannot be fetched
or read is listed with its error; the others are used."#,
    params(DriftQuery),
    responses(
        (status = 200, description = "The drift report.", body = crate::routes::iac::DriftReport, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn drift_report(State(state): State<AppState>, ApiQuery(q): ApiQuery<DriftQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let crn = match &q.crn {
        Some(text) => Some(
            svc_engine::crn::Crn::parse(text)
                .map_err(|e| ApiError::invalid(e.to_string()))?
                .to_string(),
        ),
        None => None,
    };
    let current = current(&state, &engine).await;
    let limit = q.limit.0;
    blocking(move || Ok(report(&state, &engine, &current, limit, crn.as_deref()))).await
}

fn report(state: &AppState, engine: &Engine, current: &Current, limit: usize, only: Option<&str>) -> DriftReport {
    let index = crate::iac::index(&state.inner.derived, engine, current);
    let r = {
        let now_us = engine.now_us();
        let g = engine.graph();
        let live = crate::iac::GraphLive { graph: &g, now_us };
        match only {
            Some(crn) => svc_iac::drift::report_one(&index, &live, crn),
            None => svc_iac::drift::report(&index, &live, limit),
        }
    };
    let code = |e: &Entry| {
        let block = crate::iac::block_of(current, e).ok().map(|(_, b)| b);
        CodeChangeBody::from(change::for_intent(&e.declared, "delete", block.as_ref()))
    };
    let gone = r
        .gone
        .iter()
        .filter_map(|g| index.entries.get(g.entry))
        .map(|e| GoneResource {
            address: e.declared.address.clone(),
            code_change: code(e),
            crn: e.crn.clone(),
            removed_by_svc: e.crn.as_deref().is_some_and(|c| removed_by_svc(engine, c)),
            state: source_of(current, e.state),
            terraform_type: e.declared.ty.clone(),
        })
        .collect();
    let changed = r
        .changed
        .iter()
        .filter_map(|c| Some((index.entries.get(c.entry)?, c)))
        .map(|(e, c)| ChangedResource {
            address: e.declared.address.clone(),
            attributes: c.attributes.iter().map(AttributeDriftBody::from).collect(),
            crn: e.crn.clone().unwrap_or_default(),
            state: source_of(current, e.state),
            terraform_type: e.declared.ty.clone(),
        })
        .collect();
    let unmanaged = r
        .unmanaged
        .into_iter()
        .map(|u| UnmanagedResource {
            cost_usd_mo: (u.cost_usd_mo * 100.0).round() / 100.0,
            crn: u.crn,
            terraform_type: u.terraform_type.to_owned(),
            ty: u.graph_type,
        })
        .collect();
    let (_, positions) = current.readable();
    let states = current
        .states
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let managed = positions
                .iter()
                .position(|&p| p == i)
                .map_or(0, |pos| index.entries.iter().filter(|e| e.state == pos).count());
            DriftState::new(l, managed as u64)
        })
        .collect();
    let provenance = only.map(|crn| match index.get(crn) {
        Some(e) => ProvenanceAnswer::managed(crn, provenance_of(current, e)),
        None => ProvenanceAnswer::unmanaged(crn),
    });
    DriftReport {
        configured: current.configured(),
        provenance,
        gone,
        changed,
        limit: limit as u64,
        repository: repository(current),
        states,
        totals: DriftTotals {
            attributes: r.totals.attributes as u64,
            changed: r.totals.changed as u64,
            declared: r.totals.declared as u64,
            gone: r.totals.gone as u64,
            in_sync: r.totals.in_sync as u64,
            mapped: r.totals.mapped as u64,
            outside_scans: r.totals.outside_scans as u64,
            unmanaged: r.totals.unmanaged as u64,
            unmapped: index.unmapped.len() as u64,
        },
        unmanaged,
    }
}

/// The repository as configured, and why it cannot be read when it cannot.
fn repository(current: &Current) -> Option<body::Repository> {
    let path = current.settings.repository.clone()?;
    Some(match &current.repo {
        Some(Ok(repo)) => body::Repository {
            error: None,
            head: repo.head().ok(),
            path,
        },
        Some(Err(e)) => body::Repository {
            error: Some(e.clone()),
            head: None,
            path,
        },
        None => body::Repository {
            error: None,
            head: None,
            path,
        },
    })
}

/// Whether svc's own remediation removed `crn`: the ledger holds a
/// committed step of a removing intent for it.
fn removed_by_svc(engine: &Engine, crn: &str) -> bool {
    const LOOKED_AT: usize = 256;
    engine.ledger().resource(crn, LOOKED_AT).is_ok_and(|(events, _)| {
        events
            .iter()
            .any(|e| e.event_type == "EXECUTION_COMMIT" && e.payload["intent"].as_str().is_some_and(change::removes))
    })
}

/// Query parameters of `GET /api/v1/provenance`; any other is refused.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceQuery {
    /// The resource whose declaration to find.
    #[param(value_type = crate::wire::input::CrnInput)]
    crn: String,
}

/// `GET /api/v1/provenance?crn=`.
#[utoipa::path(
    get,
    path = "/provenance",
    operation_id = "getProvenance",
    tag = "iac",
    summary = "Where a resource is declared and who wrote it: its Terraform address and state, and the commit, author, file and line of its block in `iac.repository` (blame at HEAD).",
    description = r#"`managed` is false, and the provenance fields empty (line 0), when no configured
state declares the resource. A managed resource whose block is not found (no repository
configured, a module from outside the repository, a block renamed since the state was
written) has its address and state, empty blame fields, and `missing` saying why."#,
    params(ProvenanceQuery),
    responses(
        (status = 200, description = "The resource's provenance.", body = crate::routes::iac::ProvenanceAnswer, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn provenance(State(state): State<AppState>, ApiQuery(q): ApiQuery<ProvenanceQuery>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let crn = svc_engine::crn::Crn::parse(&q.crn)
        .map_err(|e| ApiError::invalid(e.to_string()))?
        .to_string();
    let current = current(&state, &engine).await;
    blocking(move || {
        let index = crate::iac::index(&state.inner.derived, &engine, &current);
        match index.get(&crn) {
            Some(e) => Ok(ProvenanceAnswer::managed(&crn, provenance_of(&current, e))),
            None => {
                let known = {
                    let g = engine.graph();
                    crate::iac::GraphLive {
                        graph: &g,
                        now_us: engine.now_us(),
                    }
                    .contains(&crn)
                };
                if known {
                    Ok(ProvenanceAnswer::unmanaged(&crn))
                } else {
                    Err(ApiError::not_found(format!(
                        "no node with crn {crn}, and no state declares it"
                    )))
                }
            }
        }
    })
    .await
}

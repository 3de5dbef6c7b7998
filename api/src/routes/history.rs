//! The ledger history endpoints (SPEC 4.2); the wire shapes of a ledger
//! event (the stream envelope of SPEC 6.1 and the history event object) are
//! in [`body`].
//!
//! Every ledger call is blocking store I/O and runs on the blocking pool.

pub mod body;

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use svc_engine::Engine;
use svc_engine::store::ledger::{HistoryQuery, LedgerError, VerifyReport};

use super::query::{HistoryCursor, HistoryLimit, Since, Status, Until, blank_as_absent};
use super::{ApiJson, ApiQuery, parse_crn, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::Crn;
pub use body::*;

/// The youngest events a prune may remove are this many days old.
pub const MIN_RETENTION_DAYS: u64 = 1;

const US_PER_DAY: u64 = 86_400 * 1_000_000;

/// Query parameters of `GET /api/v1/history`. An empty value counts as absent.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// Event type, for example `SCAN_COMPLETED`; `s.a.u_ACTION` matches every s.a.u decision.
    #[serde(rename = "type", default, deserialize_with = "blank_as_absent")]
    event_type: Option<String>,
    /// Only events about this resource (422 when the CRN does not parse).
    #[serde(default, deserialize_with = "blank_as_absent")]
    #[param(value_type = Option<crate::wire::input::CrnInput>)]
    crn: Option<String>,
    /// Event status (case-insensitive).
    #[serde(default, deserialize_with = "blank_as_absent")]
    #[param(inline)]
    status: Option<Status>,
    /// Events at or after this time; a duration before now (`3d`, `12h`, `30m`, `45s`, `1h30m`) or an
    /// RFC 3339 time.
    #[serde(default, deserialize_with = "blank_as_absent")]
    #[param(inline)]
    since: Option<Since>,
    /// Events before this RFC 3339 time.
    #[serde(default, deserialize_with = "blank_as_absent")]
    #[param(inline)]
    until: Option<Until>,
    /// Page size.
    #[serde(default)]
    #[param(inline)]
    limit: HistoryLimit,
    /// Opaque cursor, `next_cursor` of a previous response, passed unchanged.
    #[serde(default, deserialize_with = "blank_as_absent")]
    #[param(inline)]
    cursor: Option<HistoryCursor>,
}

/// `GET /api/v1/history`: one page of matching events, newest first.
#[utoipa::path(
    get,
    path = "/history",
    operation_id = "listHistory",
    tag = "history",
    summary = "One page of ledger events, newest first.",
    description = "An empty parameter value counts as absent.",
    params(HistoryParams),
    responses(
        (status = 200, description = "A page of events.", body = crate::routes::history::HistoryPage<'static>, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn list(State(state): State<AppState>, ApiQuery(params): ApiQuery<HistoryParams>) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let query = history_query(&params, engine.now_us())?;
    let page = blocking(&engine, move |e| e.ledger().query(&query)).await?;
    json(&HistoryPage {
        events: page.events.iter().map(HistoryEvent::of).collect(),
        next_cursor: page.next_cursor.map(HistoryCursor::encode).unwrap_or_default(),
        total: page.total,
    })
}

/// A JSON response of a body that borrows from a ledger page.
fn json<T: serde::Serialize>(body: &T) -> ApiResult<Response> {
    let bytes = serde_json::to_vec(body).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

/// Turns the query parameters into a ledger query; `now_us` anchors a
/// relative `since`.
fn history_query(p: &HistoryParams, now_us: u64) -> ApiResult<HistoryQuery> {
    Ok(HistoryQuery {
        event_type: p.event_type.clone(),
        crn: p
            .crn
            .as_deref()
            .map(|raw| parse_crn(raw).map(|c| c.to_string()))
            .transpose()?,
        status: p.status.as_ref().map(|s| s.0.clone()),
        since_us: p.since.map(|s| s.at(now_us)),
        until_us: p.until.map(|u| u.0),
        limit: p.limit.0,
        before_seq: p.cursor.map(|c| c.0),
    })
}

/// `GET /api/v1/history/summary`.
#[utoipa::path(
    get,
    path = "/history/summary",
    operation_id = "getHistorySummary",
    tag = "history",
    summary = "Counts and savings over the whole ledger.",
    responses(
        (status = 200, description = "The summary.", body = crate::routes::history::HistorySummary, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn summary(State(state): State<AppState>) -> ApiResult<Json<HistorySummary>> {
    let engine = state.engine()?.clone();
    let s = blocking(&engine, |e| e.ledger().summary()).await?;
    let time = |us: Option<u64>| us.map(rfc3339).unwrap_or_default();
    Ok(Json(HistorySummary {
        approved: s.approved,
        first_event: time(s.first_event_us),
        last_event: time(s.last_event_us),
        quarantined: s.quarantined,
        rejected: s.rejected,
        session_count: s.session_count,
        total_events: s.total_events,
        total_savings_usd: s.total_savings_usd,
    }))
}

/// Query parameters of `GET /api/v1/history/resource`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResourceParams {
    /// The resource (400 when missing, 422 when it does not parse).
    #[serde(default, deserialize_with = "blank_as_absent")]
    #[param(required = true, value_type = crate::wire::input::CrnInput)]
    crn: Option<String>,
    /// Page size.
    #[serde(default)]
    #[param(inline)]
    limit: HistoryLimit,
}

/// `GET /api/v1/history/resource?crn=`: the lifecycle of one resource,
/// newest first.
#[utoipa::path(
    get,
    path = "/history/resource",
    operation_id = "getResourceHistory",
    tag = "history",
    summary = "The lifecycle of one resource, newest first.",
    params(ResourceParams),
    responses(
        (status = 200, description = "The resource's events.", body = crate::routes::history::ResourceHistory<'static>, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn resource(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ResourceParams>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let raw = params
        .crn
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("missing query parameter crn"))?;
    let crn = parse_crn(raw)?.to_string();
    let limit = params.limit.0;
    let key = crn.clone();
    let (events, total) = blocking(&engine, move |e| e.ledger().resource(&key, limit)).await?;
    json(&ResourceHistory {
        crn: Crn(crn),
        events: events.iter().map(HistoryEvent::of).collect(),
        total,
    })
}

/// `GET /api/v1/history/sessions`: every daemon run with stored events.
#[utoipa::path(
    get,
    path = "/history/sessions",
    operation_id = "listSessions",
    tag = "history",
    summary = "Every daemon run with stored events.",
    responses(
        (status = 200, description = "The sessions and the current one.", body = crate::routes::history::SessionList, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn sessions(State(state): State<AppState>) -> ApiResult<Json<SessionList>> {
    let engine = state.engine()?.clone();
    let list = blocking(&engine, |e| e.ledger().sessions()).await?;
    let sessions = list
        .iter()
        .map(|s| Session {
            event_count: s.event_count,
            first_event: rfc3339(s.first_event_us),
            last_event: rfc3339(s.last_event_us),
            session_id: s.session_id.clone(),
        })
        .collect();
    Ok(Json(SessionList {
        current: engine.session_id().to_owned(),
        sessions,
    }))
}

/// `POST /api/v1/history/prune`: removes events older than `max_age_days`
/// days and records the prune in the ledger.
#[utoipa::path(
    post,
    path = "/history/prune",
    operation_id = "pruneHistory",
    tag = "history",
    summary = "Remove events older than a number of days.",
    description = "The prune itself is recorded in the ledger as a `HISTORY_PRUNED` event by the caller's token name as its actor. `max_age_days` is at least 1 (422 otherwise). With `sau.audit_bucket` set, a prune that would remove an event not yet exported is refused (409) and removes nothing.",
    request_body(content = crate::routes::history::PruneRequest, description = "Sent with `Content-Type: application/json` (anything else is a 400)."),
    responses(
        (status = 200, description = "How many events were removed.", body = crate::routes::history::PruneResult, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn prune(
    State(state): State<AppState>,
    caller: crate::auth::Caller,
    ApiJson(req): ApiJson<PruneRequest>,
) -> ApiResult<Json<PruneResult>> {
    let engine = state.engine()?.clone();
    let days = u64::try_from(req.max_age_days)
        .map_err(|_| ApiError::bad_request(format!("invalid max_age_days {}: must be 0 or more", req.max_age_days)))?;
    if days < MIN_RETENTION_DAYS {
        return Err(ApiError::invalid(format!(
            "max_age_days {days}: the ledger keeps at least {MIN_RETENTION_DAYS} day of events"
        )));
    }
    let cutoff_us = engine.now_us().saturating_sub(days.saturating_mul(US_PER_DAY));
    // With a bucket set, nothing leaves the ledger before it is in the
    // bucket: an event older than the cutoff and not yet exported stops
    // the prune, which removes nothing.
    let bucket = state.exporter().and_then(|x| x.settings().bucket);
    if let Some(bucket) = bucket {
        let first_unexported = blocking(&engine, |e| {
            let through = e.ledger().exported_through()?;
            Ok(e.ledger().events_after(through, 1)?.into_iter().next())
        })
        .await?;
        if let Some(e) = first_unexported.filter(|e| e.ts_us < cutoff_us) {
            return Err(ApiError::conflict(format!(
                "event {} and later are older than the cutoff but not yet exported to {bucket}; \
                 export them first (POST /api/v1/ledger/export) or prune with a larger max_age_days",
                e.seq
            )));
        }
    }
    let pruned = blocking(&engine, move |e| e.ledger().prune(cutoff_us, &caller.name)).await?;
    Ok(Json(PruneResult {
        max_age_days: req.max_age_days,
        pruned,
    }))
}

/// `GET /api/v1/ledger/verify`: walks the hash chain.
#[utoipa::path(
    get,
    path = "/ledger/verify",
    operation_id = "verifyLedger",
    tag = "history",
    summary = "Walk the ledger's hash chain.",
    responses(
        (status = 200, description = "The verification result.", body = crate::routes::history::LedgerVerification, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn verify(State(state): State<AppState>) -> ApiResult<Json<LedgerVerification>> {
    let engine = state.engine()?.clone();
    let r = blocking(&engine, |e| e.ledger().verify()).await?;
    Ok(Json(LedgerVerification::from(&r)))
}

/// The wire form of a chain verification ([`LedgerVerification`]) as a JSON
/// value, for `svc ledger verify --file`.
pub fn verify_report(r: &VerifyReport) -> Value {
    serde_json::to_value(LedgerVerification::from(r)).unwrap_or_default()
}

/// Runs a ledger call on the blocking pool.
pub(crate) async fn blocking<T, F>(engine: &Arc<Engine>, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce(&Engine) -> Result<T, LedgerError> + Send + 'static,
{
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || f(&engine))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::from)
}

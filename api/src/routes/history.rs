//! The ledger history endpoints (SPEC 4.2) and the wire shapes of a ledger
//! event: the stream envelope of SPEC 6.1 and the history event object.
//!
//! Every ledger call is blocking store I/O and runs on the blocking pool.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use svc_engine::Engine;
use svc_engine::store::ledger::{Event, HistoryQuery, LedgerError, VerifyReport};

use super::query::{HistoryCursor, HistoryLimit, Since, Status, Until, blank_as_absent};
use super::{ApiJson, ApiQuery, parse_crn, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Actor recorded on the audit event a prune through the API appends.
const PRUNE_ACTOR: &str = "api";
const US_PER_DAY: u64 = 86_400 * 1_000_000;

/// The stream envelope of SPEC 6.1 (`event_type`, `timestamp` in Unix
/// seconds, `payload`) plus the ledger fields a client needs to resume and
/// to check the chain: `seq`, `id`, `crn`, `actor`, `message`,
/// `session_id`, `hash`, `prev_hash`.
pub fn envelope(e: &Event) -> Value {
    json!({
        "event_type": e.event_type,
        "timestamp": e.ts_us / 1_000_000,
        "payload": payload_object(&e.payload),
        "seq": e.seq,
        "id": e.seq.to_string(),
        "crn": e.crn,
        "actor": e.actor,
        "message": e.message,
        "session_id": e.session_id,
        "hash": e.hash_hex(),
        "prev_hash": hex::encode(e.prev_hash),
    })
}

/// The history event object of SPEC 4.2 plus `seq` and `hash`.
pub fn event_object(e: &Event) -> Value {
    json!({
        "id": e.seq.to_string(),
        "ts": rfc3339(e.ts_us),
        "type": e.event_type,
        "crn": e.crn,
        "status": e.status(),
        "message": e.message,
        "actor": e.actor,
        "session_id": e.session_id,
        "meta": payload_object(&e.payload),
        "seq": e.seq,
        "hash": e.hash_hex(),
    })
}

/// The payload as a JSON object: `null` becomes `{}` and any other
/// non-object value is kept under `value`.
fn payload_object(payload: &Value) -> Value {
    match payload {
        Value::Object(_) => payload.clone(),
        Value::Null => Value::Object(Map::new()),
        other => json!({ "value": other }),
    }
}

/// Query parameters of `GET /api/v1/history`. An empty value counts as absent.
#[derive(Debug, Default, Deserialize)]
pub struct HistoryParams {
    /// Event type, for example `SCAN_COMPLETED`; `s.a.u_ACTION` matches every s.a.u decision.
    #[serde(rename = "type", default, deserialize_with = "blank_as_absent")]
    event_type: Option<String>,
    /// Only events about this resource.
    #[serde(default, deserialize_with = "blank_as_absent")]
    crn: Option<String>,
    /// Only events with this status (any case).
    #[serde(default, deserialize_with = "blank_as_absent")]
    status: Option<Status>,
    /// Events at or after this time: a duration before now (`3d`, `12h`, `30m`, `45s`) or an RFC 3339 time.
    #[serde(default, deserialize_with = "blank_as_absent")]
    since: Option<Since>,
    /// Events at or before this RFC 3339 time.
    #[serde(default, deserialize_with = "blank_as_absent")]
    until: Option<Until>,
    /// Page size.
    #[serde(default)]
    limit: HistoryLimit,
    /// Opaque cursor, `next_cursor` of a previous response.
    #[serde(default, deserialize_with = "blank_as_absent")]
    cursor: Option<HistoryCursor>,
}

/// `GET /api/v1/history`: one page of matching events, newest first.
pub async fn list(State(state): State<AppState>, ApiQuery(params): ApiQuery<HistoryParams>) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let query = history_query(&params, engine.now_us())?;
    let page = blocking(&engine, move |e| e.ledger().query(&query)).await?;
    Ok(Json(json!({
        "events": page.events.iter().map(event_object).collect::<Vec<_>>(),
        "next_cursor": page.next_cursor.map(HistoryCursor::encode).unwrap_or_default(),
        "total": page.total,
    })))
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
pub async fn summary(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let s = blocking(&engine, |e| e.ledger().summary()).await?;
    let time = |us: Option<u64>| us.map(rfc3339).unwrap_or_default();
    Ok(Json(json!({
        "total_events": s.total_events,
        "quarantined": s.quarantined,
        "approved": s.approved,
        "rejected": s.rejected,
        "session_count": s.session_count,
        "total_savings_usd": s.total_savings_usd,
        "first_event": time(s.first_event_us),
        "last_event": time(s.last_event_us),
    })))
}

/// Query parameters of `GET /api/v1/history/resource`.
#[derive(Debug, Default, Deserialize)]
pub struct ResourceParams {
    /// The resource (required).
    #[serde(default, deserialize_with = "blank_as_absent")]
    crn: Option<String>,
    /// Most events listed.
    #[serde(default)]
    limit: HistoryLimit,
}

/// `GET /api/v1/history/resource?crn=`: the lifecycle of one resource,
/// newest first.
pub async fn resource(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ResourceParams>,
) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let raw = params
        .crn
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("missing query parameter crn"))?;
    let crn = parse_crn(raw)?.to_string();
    let limit = params.limit.0;
    let key = crn.clone();
    let (events, total) = blocking(&engine, move |e| e.ledger().resource(&key, limit)).await?;
    Ok(Json(json!({
        "crn": crn,
        "events": events.iter().map(event_object).collect::<Vec<_>>(),
        "total": total,
    })))
}

/// `GET /api/v1/history/sessions`: every daemon run with stored events.
pub async fn sessions(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let list = blocking(&engine, |e| e.ledger().sessions()).await?;
    let sessions: Vec<Value> = list
        .iter()
        .map(|s| {
            json!({
                "session_id": s.session_id,
                "first_event": rfc3339(s.first_event_us),
                "last_event": rfc3339(s.last_event_us),
                "event_count": s.event_count,
            })
        })
        .collect();
    Ok(Json(json!({ "sessions": sessions, "current": engine.session_id() })))
}

#[derive(Debug, Deserialize)]
pub struct PruneRequest {
    max_age_days: i64,
}

/// `POST /api/v1/history/prune`: removes events older than `max_age_days`
/// days and records the prune in the ledger.
pub async fn prune(State(state): State<AppState>, ApiJson(req): ApiJson<PruneRequest>) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let days = u64::try_from(req.max_age_days)
        .map_err(|_| ApiError::bad_request(format!("invalid max_age_days {}: must be 0 or more", req.max_age_days)))?;
    let cutoff_us = engine.now_us().saturating_sub(days.saturating_mul(US_PER_DAY));
    let pruned = blocking(&engine, move |e| e.ledger().prune(cutoff_us, PRUNE_ACTOR)).await?;
    Ok(Json(json!({ "pruned": pruned, "max_age_days": req.max_age_days })))
}

/// `GET /api/v1/ledger/verify`: walks the hash chain.
pub async fn verify(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let r = blocking(&engine, |e| e.ledger().verify()).await?;
    Ok(Json(verify_report(&r)))
}

/// The wire form of a chain verification, shared by the API and
/// `svc ledger verify --file`: `ok`, `events` (events checked and found
/// right), the stored seq range and `first_broken` (`null` or
/// `{seq, reason}`).
pub fn verify_report(r: &VerifyReport) -> Value {
    json!({
        "ok": r.ok,
        "events": r.checked,
        "first_seq": r.first_seq,
        "last_seq": r.last_seq,
        "first_broken": r.first_broken.as_ref().map(|b| json!({"seq": b.seq, "reason": b.reason})),
    })
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

//! The ledger history endpoints (SPEC 4.2) and the wire shapes of a ledger
//! event: the stream envelope of SPEC 6.1 and the history event object.
//!
//! Every ledger call is blocking store I/O and runs on the blocking pool.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use svc_engine::Engine;
use svc_engine::store::ledger::{
    Event, HISTORY_DEFAULT_LIMIT, HISTORY_MAX_LIMIT, HistoryQuery, LedgerError, VerifyReport,
};

use super::{ApiJson, ApiQuery, parse_crn, parse_rfc3339, rfc3339};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Actor recorded on the audit event a prune through the API appends.
const PRUNE_ACTOR: &str = "api";
/// The status values the `status` filter accepts.
const STATUSES: [&str; 4] = ["OK", "APPROVED", "REJECTED", "QUARANTINED"];
const US_PER_DAY: u64 = 86_400 * 1_000_000;

/// Cursors are written without padding and read with or without it.
const CURSOR: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

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

/// Query parameters of `GET /api/v1/history`, kept as text so each bad
/// value gets a message that names it. An empty value counts as absent.
#[derive(Debug, Default, Deserialize)]
pub struct HistoryParams {
    #[serde(rename = "type")]
    event_type: Option<String>,
    crn: Option<String>,
    status: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// `GET /api/v1/history`: one page of matching events, newest first.
pub async fn list(State(state): State<AppState>, ApiQuery(params): ApiQuery<HistoryParams>) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let query = history_query(&params, engine.now_us())?;
    let page = blocking(&engine, move |e| e.ledger().query(&query)).await?;
    Ok(Json(json!({
        "events": page.events.iter().map(event_object).collect::<Vec<_>>(),
        "next_cursor": page.next_cursor.map(encode_cursor).unwrap_or_default(),
        "total": page.total,
    })))
}

/// Turns the query parameters into a ledger query; `now_us` anchors a
/// relative `since`.
fn history_query(p: &HistoryParams, now_us: u64) -> ApiResult<HistoryQuery> {
    Ok(HistoryQuery {
        event_type: present(&p.event_type).map(str::to_owned),
        crn: present(&p.crn)
            .map(|raw| parse_crn(raw).map(|c| c.to_string()))
            .transpose()?,
        status: present(&p.status).map(parse_status).transpose()?,
        since_us: present(&p.since).map(|s| parse_since(s, now_us)).transpose()?,
        until_us: present(&p.until).map(parse_until).transpose()?,
        limit: parse_limit(present(&p.limit))?,
        before_seq: present(&p.cursor).map(decode_cursor).transpose()?,
    })
}

fn present(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

fn parse_status(raw: &str) -> ApiResult<String> {
    let upper = raw.to_ascii_uppercase();
    if STATUSES.contains(&upper.as_str()) {
        Ok(upper)
    } else {
        Err(ApiError::bad_request(format!(
            "invalid status {raw:?}: expected one of {}",
            STATUSES.join(", ")
        )))
    }
}

/// `since`: a duration before `now_us` (`3d`, `12h`, `30m`, `45s`, `1h30m`)
/// or an RFC 3339 time.
fn parse_since(raw: &str, now_us: u64) -> ApiResult<u64> {
    if let Ok(d) = humantime::parse_duration(raw) {
        return Ok(now_us.saturating_sub(duration_us(d)));
    }
    parse_rfc3339(raw).ok_or_else(|| {
        ApiError::bad_request(format!(
            "invalid since {raw:?}: expected a duration such as 3d, 12h, 30m or 45s, or an RFC 3339 time"
        ))
    })
}

fn duration_us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn parse_until(raw: &str) -> ApiResult<u64> {
    parse_rfc3339(raw).ok_or_else(|| {
        ApiError::bad_request(format!(
            "invalid until {raw:?}: expected an RFC 3339 time such as 2026-01-02T15:04:05Z"
        ))
    })
}

/// Page size: absent is the default, anything but 1..=500 is a 400.
fn parse_limit(raw: Option<&str>) -> ApiResult<usize> {
    let Some(raw) = raw else {
        return Ok(HISTORY_DEFAULT_LIMIT);
    };
    match raw.parse::<usize>() {
        Ok(n) if (1..=HISTORY_MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "invalid limit {raw:?}: expected an integer from 1 to {HISTORY_MAX_LIMIT}"
        ))),
    }
}

/// A cursor is the base64url text of the seq of the last event returned.
fn encode_cursor(seq: u64) -> String {
    CURSOR.encode(seq.to_string())
}

fn decode_cursor(raw: &str) -> ApiResult<u64> {
    CURSOR
        .decode(raw)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.parse::<u64>().ok())
        .filter(|seq| *seq > 0)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "invalid cursor {raw:?}: pass next_cursor of a previous response unchanged"
            ))
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

#[derive(Debug, Default, Deserialize)]
pub struct ResourceParams {
    crn: Option<String>,
    limit: Option<String>,
}

/// `GET /api/v1/history/resource?crn=`: the lifecycle of one resource,
/// newest first.
pub async fn resource(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ResourceParams>,
) -> ApiResult<Json<Value>> {
    let engine = state.engine()?.clone();
    let raw = present(&params.crn).ok_or_else(|| ApiError::bad_request("missing query parameter crn"))?;
    let crn = parse_crn(raw)?.to_string();
    let limit = parse_limit(present(&params.limit))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        for seq in [1, 100, u64::MAX] {
            assert_eq!(decode_cursor(&encode_cursor(seq)).ok(), Some(seq));
        }
        assert_eq!(decode_cursor("MTAw").ok(), Some(100));
        assert_eq!(decode_cursor("MTA").ok(), Some(10));
        assert_eq!(decode_cursor("MTA=").ok(), Some(10));
        for bad in ["!!", "MA", "YWJj", "-1", "%%%"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn since_accepts_durations_and_times() {
        let now = 10 * US_PER_DAY;
        assert_eq!(parse_since("3d", now).ok(), Some(7 * US_PER_DAY));
        assert_eq!(parse_since("12h", now).ok(), Some(now - 12 * 3_600_000_000));
        assert_eq!(parse_since("30m", now).ok(), Some(now - 30 * 60_000_000));
        assert_eq!(parse_since("45s", now).ok(), Some(now - 45_000_000));
        assert_eq!(parse_since("1000d", now).ok(), Some(0));
        assert_eq!(parse_since("1970-01-02T00:00:00Z", now).ok(), Some(US_PER_DAY));
        for bad in ["yesterday", "3", "-3d", "2026-13-01T00:00:00Z"] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn limit_bounds() {
        assert_eq!(parse_limit(None).ok(), Some(HISTORY_DEFAULT_LIMIT));
        assert_eq!(parse_limit(Some("1")).ok(), Some(1));
        assert_eq!(parse_limit(Some("500")).ok(), Some(500));
        for bad in ["0", "-1", "501", "ten", "1.5"] {
            let e = parse_limit(Some(bad)).err().map(|e| e.message);
            assert!(e.is_some_and(|m| m.contains("1 to 500")), "{bad}");
        }
    }

    #[test]
    fn status_is_one_of_four() {
        assert_eq!(parse_status("approved").ok().as_deref(), Some("APPROVED"));
        assert!(parse_status("DONE").is_err());
    }
}

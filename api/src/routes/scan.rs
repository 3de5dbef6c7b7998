//! Scan triggers: `POST /api/v1/engine/scan` (manual re-scan) and
//! `POST /api/v1/sync` (the reconciliation cycle). Both run the engine's
//! one pipeline; only one scan runs at a time.
//!
//! The body is optional: empty, or a JSON object `{"wait": bool}`; the query
//! flag `?wait=true` does the same. Without `wait` the answer is 202
//! `{"status":"started","scan_seq":N,"cycle":..}` and the scan runs on the
//! blocking pool; with it the answer is 200 with the scan report (the
//! SCAN_COMPLETED payload) plus `"status":"completed"`, `"cycle"` and
//! `"event_seq"`. A scan already running is 409; a failed scan is 500 (and
//! logged, and counted in the metrics).

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::{error, info};
use utoipa::ToSchema;

use super::ApiQuery;

/// The longest `timeout` a scan request takes: a year (a deadline further
/// out overflows the clock).
const MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);
use super::query::Flag;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::wire::listed_str;
use svc_engine::scan::progress::SourceState;

/// Query parameters of the scan triggers.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScanQuery {
    /// Answer when the scan has finished (200) instead of when it started (202). Accepts
    /// `true`/`1`/`yes`, `false`/`0`/`no`; the bare flag means true.
    #[serde(default)]
    #[param(inline)]
    wait: Flag,
}

/// The optional body of the scan triggers: empty (or only whitespace), or
/// this object, whatever the content type.
#[derive(Deserialize, Default, ToSchema)]
#[schema(as = ScanRequest)]
pub struct ScanBody {
    /// Answer when the scan has finished.
    #[serde(default)]
    #[schema(default = false)]
    wait: bool,
    // Scan only the source serving this provider (the schema says so).
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::ProviderInput>, nullable = false, inline)]
    provider: Option<String>,
    // How long each source may scan before it is cancelled (the schema says so).
    #[serde(default)]
    #[schema(value_type = Option<crate::wire::input::DurationInput>, nullable = false, inline)]
    timeout: Option<String>,
}

listed_str! {
    /// Which trigger started the scan.
    ScanCycle ["scan", "sync"]
}

listed_str! {
    ScanStatus ["started"]
}

/// The answer when the scan has started. Fields are declared in the order
/// they are written: by name.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanStarted {
    pub cycle: ScanCycle,
    /// Sequence number the scan will have.
    #[schema(minimum = 1)]
    pub scan_seq: u64,
    pub status: ScanStatus,
}

/// What a trigger asks for.
struct Request {
    wait: bool,
    provider: Option<String>,
    timeout: Option<std::time::Duration>,
}

/// Which trigger started a scan; shown as `cycle` in the answer and the log.
#[derive(Copy, Clone)]
enum Cycle {
    Scan,
    Sync,
}

impl Cycle {
    fn name(self) -> &'static str {
        match self {
            Cycle::Scan => "scan",
            Cycle::Sync => "sync",
        }
    }
}

/// `wait` from the query or the body, and the optional `provider`; a body
/// that is present must be a JSON object.
fn request(q: &ScanQuery, body: Result<Bytes, BytesRejection>) -> ApiResult<Request> {
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::payload_too_large(format!(
                "request body is larger than {} bytes",
                crate::error::MAX_BODY_BYTES
            ))
        } else {
            ApiError::bad_request(format!("cannot read request body: {}", e.body_text()))
        }
    })?;
    let from_query = q.wait.0;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Request {
            wait: from_query,
            provider: None,
            timeout: None,
        });
    }
    let bad = |e: &dyn std::fmt::Display| {
        ApiError::bad_request(format!(
            "malformed request body: {e}: expected {{\"wait\": true|false, \"provider\": \"...\"}}"
        ))
    };
    let value: Value = serde_json::from_slice(&body).map_err(|e| bad(&e))?;
    if !value.is_object() {
        return Err(bad(&"not a JSON object"));
    }
    let parsed: ScanBody = serde_json::from_value(value).map_err(|e| bad(&e))?;
    let timeout = match parsed.timeout.as_deref() {
        None => None,
        Some(t) => match humantime::parse_duration(t) {
            Ok(d) if d > MAX_TIMEOUT => {
                return Err(ApiError::bad_request(format!("timeout {t:?} is longer than 365d")));
            }
            Ok(d) if d >= std::time::Duration::from_secs(1) => Some(d),
            Ok(_) => return Err(ApiError::bad_request(format!("timeout {t:?} is shorter than 1s"))),
            Err(e) => {
                return Err(ApiError::bad_request(format!(
                    "timeout {t:?} is not a duration such as 20m: {e}"
                )));
            }
        },
    };
    Ok(Request {
        wait: from_query || parsed.wait,
        provider: parsed.provider,
        timeout,
    })
}

async fn trigger(
    state: AppState,
    cycle: Cycle,
    q: ScanQuery,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    let Request {
        wait,
        provider,
        timeout,
    } = request(&q, body)?;
    let engine = state.engine()?.clone();
    let permit = engine
        .try_start_scan()
        .ok_or_else(|| ApiError::conflict("a scan is already running"))?;
    // Checked under the permit: no scan holds the sources now.
    if let Some(p) = &provider
        && !engine.source_providers().contains(p)
    {
        return Err(ApiError::invalid(format!("no plugin registered for provider: {p}")));
    }
    // No other scan can commit while the permit is held.
    let scan_seq = engine.scans_completed() + 1;
    info!(scan_seq, cycle = cycle.name(), wait, "scan requested");
    let metrics_state = state.clone();
    let run = tokio::task::spawn_blocking(move || {
        let result = permit.run_with(provider.map(|p| vec![p]), timeout);
        if let Err(e) = &result {
            error!(scan_seq, cycle = cycle.name(), error = %e, "scan failed");
            metrics_state.inner.metrics.observe_scan_failure();
        }
        result
    });
    if !wait {
        return Ok((
            StatusCode::ACCEPTED,
            Json(ScanStarted {
                cycle: ScanCycle::from(cycle.name()),
                scan_seq,
                status: ScanStatus::from("started"),
            }),
        )
            .into_response());
    }
    let report = run.await.map_err(ApiError::internal)?.map_err(ApiError::from)?;
    let mut body = serde_json::to_value(report.payload()).map_err(ApiError::internal)?;
    if let Value::Object(m) = &mut body {
        m.insert("status".into(), "completed".into());
        m.insert("cycle".into(), cycle.name().into());
        m.insert("event_seq".into(), report.event_seq.into());
    }
    Ok((StatusCode::OK, Json(body)).into_response())
}

/// `POST /api/v1/engine/scan`: a manual re-scan of every configured source.
#[utoipa::path(
    post,
    path = "/engine/scan",
    operation_id = "triggerScan",
    tag = "scan",
    summary = "Trigger a manual re-scan of every configured source.",
    description = r#"Without `wait` the scan runs in the background and the answer is 202.
With `wait` (query flag or body) the answer is 200 with the scan report
once the scan finished. Only one scan runs at a time: 409 otherwise."#,
    params(ScanQuery),
    request_body(content = ScanBody, description = "Optional. Empty (or only whitespace), or a JSON object; read whatever the content type. `wait` here or in the query makes the call wait.", content_type = "application/json"),
    responses(
        (status = 200, description = "The scan finished (`wait`).", body = crate::wire::payloads::ScanCompleted, content_type = "application/json"),
        (status = 202, description = "The scan started.", body = crate::routes::scan::ScanStarted, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 422, response = crate::openapi::Invalid),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn trigger_scan(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ScanQuery>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    trigger(state, Cycle::Scan, q, body).await
}

/// How one source's part of the running scan stands.
#[derive(Serialize, ToSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SourceScanState {
    Scanning,
    Done,
    Failed,
}

/// One source of the running scan.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceScanProgress {
    /// Edges received so far.
    pub edges: u64,
    /// Why it failed; its resources are kept as they were.
    pub error: Option<String>,
    pub name: String,
    /// Nodes received so far.
    pub nodes: u64,
    pub state: SourceScanState,
}

/// How the last scan of this daemon run ended.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LastScan {
    pub duration_ms: u64,
    pub edge_count: u64,
    /// Why it failed: nothing of it was committed.
    pub error: Option<String>,
    pub node_count: u64,
    pub ok: bool,
    pub scan_seq: u64,
}

/// `GET /api/v1/engine/scan/progress`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanProgress {
    /// Edges received so far from every source; 0 when idle.
    pub edges: u64,
    /// Since the running scan started; 0 when idle.
    pub elapsed_ms: u64,
    /// How the last scan of this daemon run ended; `null` before the first.
    pub last_scan: Option<LastScan>,
    /// Nodes received so far from every source; 0 when idle.
    pub nodes: u64,
    /// The phase running (its SPEC span name, such as `engine.plugin_scan`),
    /// `commit` once every phase ran; `null` when idle.
    pub phase: Option<&'static str>,
    /// How many phases a scan has.
    pub phase_count: u64,
    /// 1-based position of `phase` among them (`phase_count` while
    /// committing); 0 when idle.
    pub phase_index: u64,
    pub scanning: bool,
    /// The running scan's sequence number (0 while it starts), else the last scan's.
    pub scan_seq: u64,
    /// The running scan's sources, in the order they were asked.
    pub sources: Vec<SourceScanProgress>,
}

/// `GET /api/v1/engine/scan/progress`: what the running scan has done.
#[utoipa::path(
    get,
    path = "/engine/scan/progress",
    operation_id = "getScanProgress",
    tag = "scan",
    summary = "The running scan's phase and, per source, the nodes and edges received so far; how the last scan ended.",
    description = r#"Read it while a scan runs (`svc scan` polls it to draw its progress). A
scan started with `POST /api/v1/engine/scan` (202, `scan_seq` N) is over when
`scanning` is false and `last_scan.scan_seq` is N or more; `last_scan.ok`
false with its `error` when it failed."#,
    responses(
        (status = 200, description = "The progress.", body = crate::routes::scan::ScanProgress, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn progress(State(state): State<AppState>) -> ApiResult<Json<ScanProgress>> {
    let engine = state.engine()?;
    let (running, last) = engine.scan_progress();
    let last_scan = last.map(|f| LastScan {
        duration_ms: f.duration_ms,
        edge_count: f.edges,
        ok: f.error.is_none(),
        error: f.error,
        node_count: f.nodes,
        scan_seq: f.scan_seq,
    });
    let phase_count = svc_engine::scan::spans::PHASES.len() as u64;
    let body = match running {
        Some(r) => {
            let sources: Vec<SourceScanProgress> = r
                .sources
                .into_iter()
                .map(|s| SourceScanProgress {
                    edges: s.edges,
                    error: s.error,
                    name: s.name,
                    nodes: s.nodes,
                    state: match s.state {
                        SourceState::Scanning => SourceScanState::Scanning,
                        SourceState::Done => SourceScanState::Done,
                        SourceState::Failed => SourceScanState::Failed,
                    },
                })
                .collect();
            ScanProgress {
                edges: sources.iter().map(|s| s.edges).sum(),
                elapsed_ms: r.elapsed_ms,
                last_scan,
                nodes: sources.iter().map(|s| s.nodes).sum(),
                phase: Some(r.phase),
                phase_count,
                phase_index: r.phase_index as u64,
                scanning: true,
                scan_seq: r.scan_seq,
                sources,
            }
        }
        None => ScanProgress {
            edges: 0,
            elapsed_ms: 0,
            scan_seq: last_scan.as_ref().map_or(0, |l| l.scan_seq),
            last_scan,
            nodes: 0,
            phase: None,
            phase_count,
            phase_index: 0,
            scanning: false,
            sources: Vec::new(),
        },
    };
    Ok(Json(body))
}

/// `POST /api/v1/sync`: an immediate reconciliation cycle (the same pipeline).
#[utoipa::path(
    post,
    path = "/sync",
    operation_id = "triggerSync",
    tag = "scan",
    summary = "Trigger an immediate reconciliation cycle.",
    description = "The same pipeline and the same answers as `/api/v1/engine/scan`, with `cycle` `sync`.",
    params(ScanQuery),
    request_body(content = ScanBody, description = "Optional. Empty (or only whitespace), or a JSON object; read whatever the content type. `wait` here or in the query makes the call wait.", content_type = "application/json"),
    responses(
        (status = 200, description = "The cycle finished (`wait`).", body = crate::wire::payloads::ScanCompleted, content_type = "application/json"),
        (status = 202, description = "The cycle started.", body = crate::routes::scan::ScanStarted, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 422, response = crate::openapi::Invalid),
        (status = 409, response = crate::openapi::Conflict),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn trigger_sync(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ScanQuery>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    trigger(state, Cycle::Sync, q, body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(q: Option<&str>, body: &str) -> Option<bool> {
        let q = ScanQuery {
            wait: Flag(q == Some("true")),
        };
        request(&q, Ok(Bytes::copy_from_slice(body.as_bytes())))
            .ok()
            .map(|r| r.wait)
    }

    #[test]
    fn wait_comes_from_query_or_body() {
        assert_eq!(wait(None, ""), Some(false));
        assert_eq!(wait(None, "  \n"), Some(false));
        assert_eq!(wait(Some("true"), ""), Some(true));
        assert_eq!(wait(None, r#"{"wait": true}"#), Some(true));
        assert_eq!(wait(None, r#"{"wait": false}"#), Some(false));
        assert_eq!(wait(None, "{}"), Some(false));
        assert_eq!(wait(None, r#"{"wait": "soon"}"#), None);
        assert_eq!(wait(None, "[1]"), None);
        let q = ScanQuery::default();
        let r = request(&q, Ok(Bytes::from_static(br#"{"provider": "aws", "wait": true}"#)))
            .ok()
            .unwrap();
        assert_eq!((r.wait, r.provider.as_deref()), (true, Some("aws")));
        let r = request(&q, Ok(Bytes::from_static(br#"{"timeout": "20m"}"#)))
            .ok()
            .unwrap();
        assert_eq!(r.timeout, Some(std::time::Duration::from_secs(1200)));
        assert!(request(&q, Ok(Bytes::from_static(br#"{"timeout": "soon"}"#))).is_err());
        assert!(request(&q, Ok(Bytes::from_static(br#"{"timeout": "10ms"}"#))).is_err());
    }
}

//! `POST /api/v1/ledger/export`: a compliance export now (SPEC 6.2).
//! (`GET /api/v1/ledger/verify` lives with the history routes.)

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult};
use crate::export::{self, ExportError};
use crate::state::AppState;

/// `POST /api/v1/ledger/export`: what one compliance export wrote.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerExport {
    /// The bucket written to, as configured (`file:///dir` or `s3://bucket/prefix`).
    pub bucket: String,
    pub events: u64,
    /// Every event through this seq is in the bucket.
    pub exported_through: u64,
    /// Name of the last object written (without the bucket prefix); null when nothing was new.
    #[schema(required = true)]
    pub file: Option<String>,
    pub files: Vec<ExportedObject>,
    /// First seq written by this call; 0 when nothing was new.
    pub first_seq: u64,
    /// Last seq written by this call; 0 when nothing was new.
    pub last_seq: u64,
}

/// One object an export wrote.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportedObject {
    pub bytes: u64,
    #[schema(minimum = 1)]
    pub events: u64,
    #[schema(minimum = 1)]
    pub first_seq: u64,
    #[schema(minimum = 1)]
    pub last_seq: u64,
    pub name: String,
}

/// Exports every event after the last exported one and answers with the
/// objects written: `{bucket, file, first_seq, last_seq, events, files,
/// exported_through}`. `file` is the last object's name (null when nothing
/// was new); `first_seq..=last_seq` the range written by this call (0 and
/// 0 when nothing was new). 409 when no bucket is configured, 502 when the
/// bucket refused the write (nothing is lost: the next run retries).
#[utoipa::path(
    post,
    path = "/ledger/export",
    operation_id = "exportLedger",
    tag = "history",
    summary = "Write every event not yet exported to `sau.audit_bucket` now (SPEC 6.2).",
    description = "Does what the export schedule does every `sau.audit_export_interval`: the events after the last exported seq go out as gzip JSONL objects named `ledger-<timestamp>-<first seq>.jsonl.gz` (at most `sau.audit_export_max_events` events each), one line per event `{daemon_uuid, daemon_version, os_arch, event_idx, event}`. The last exported seq is moved only after an object is written, so after a crash the next export rewrites the same object and no event is exported twice or skipped. Runs never overlap; a request made during a scheduled run waits for it. No request body is read; one over 1 MiB is refused (413).",
    responses(
        (status = 200, description = "What was written; `events` 0 and `file` null when nothing was new.", body = crate::routes::ledger::LedgerExport, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 409, description = "No bucket is configured (`conflict`); set `sau.audit_bucket`.", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 507, response = crate::openapi::InsufficientStorage),
        (status = 500, response = crate::openapi::Internal),
        (status = 502, description = "The bucket refused the write or could not be reached (`bad_gateway`); nothing was marked exported, the next run retries the same events.", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn export_now(State(state): State<AppState>) -> ApiResult<Json<LedgerExport>> {
    state.engine()?;
    let exporter = state
        .exporter()
        .ok_or_else(|| ApiError::not_ready("the exporter is still starting"))?;
    let result = exporter.export_now().await;
    export::observe(&state, &result);
    let run = result.map_err(|e| match e {
        ExportError::NotConfigured => ApiError::conflict(e.to_string()),
        ExportError::Bucket { .. } => {
            tracing::error!(error = %e, "compliance export failed");
            let mut api = ApiError::new_status(StatusCode::BAD_GATEWAY, "bad_gateway", e.to_string());
            api.details = json!({"retry": "the next export retries from the same event"});
            api
        }
        ExportError::Ledger(e) => e.into(),
        other => ApiError::internal(other),
    })?;
    let files = run
        .files
        .iter()
        .map(|f| ExportedObject {
            bytes: f.bytes,
            events: f.events,
            first_seq: f.first_seq,
            last_seq: f.last_seq,
            name: f.name.clone(),
        })
        .collect();
    Ok(Json(LedgerExport {
        bucket: run.bucket.clone(),
        events: run.files.iter().map(|f| f.events).sum::<u64>(),
        exported_through: run.exported_through,
        file: run.files.last().map(|f| f.name.clone()),
        files,
        first_seq: run.files.first().map_or(0, |f| f.first_seq),
        last_seq: run.files.last().map_or(0, |f| f.last_seq),
    }))
}

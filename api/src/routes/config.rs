//! `GET` and `PUT /api/v1/config`.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use super::ApiJson;
use crate::config::ConfigError;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The configuration tree of `config.toml`, as a JSON object; the daemon
/// owns its keys and their types.
#[derive(Serialize, Deserialize)]
#[serde(transparent)]
pub struct Config(pub Value);

impl utoipa::PartialSchema for Config {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "The configuration tree of `config.toml`: sections `daemon` (scan_interval, scan_timeout), \
                 `plugins` (active, config), `heuristics` (builtin, disabled), `oracle` (enabled, \
                 trigger_threshold), `sau` (audit_bucket, audit_export_interval, audit_export_max_events), \
                 `ai` (provider, model), `notify` (slack_webhook, webhooks, events, waste_threshold_usd, timeout, \
                 max_attempts, backoff, backoff_max, dashboard_url; webhook URLs and secrets read as `(hidden)`).",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Config {}

/// `GET /api/v1/config`: the configuration file as JSON.
#[utoipa::path(
    get,
    path = "/config",
    operation_id = "getConfig",
    tag = "config",
    summary = "The configuration file (`config.toml`) as JSON.",
    responses(
        (status = 200, description = "The configuration tree; keys absent from the file take their defaults.", body = crate::routes::config::Config, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn get(State(state): State<AppState>) -> ApiResult<Json<Config>> {
    let config = state
        .config()
        .ok_or_else(|| ApiError::not_ready("the configuration is still loading"))?;
    Ok(Json(Config(
        tokio::task::spawn_blocking(move || config.get())
            .await
            .map_err(ApiError::internal)?,
    )))
}

/// `PUT /api/v1/config`: deep-merge, validate (422 and nothing applied on
/// an unknown key or a bad value), write, apply.
#[utoipa::path(
    put,
    path = "/config",
    operation_id = "putConfig",
    tag = "config",
    summary = "Deep-merge into the configuration, validate, write and apply without a restart.",
    description = r#"Objects merge key by key, any other value replaces, `null` removes a key (back to its default). Keys may be nested (`{"sau": {"audit_bucket": ..}}`) or dotted (`{"sau.audit_bucket": ..}`). The merged configuration is validated as a whole: an unknown key or a bad value (for example an `sau.audit_bucket` that is neither `file:///dir` nor `s3://bucket/prefix`) is a 422 and nothing is applied or written. Applied live: `daemon.scan_interval`, `heuristics`, `oracle.enabled`, `sau.audit_bucket`, `sau.audit_export_interval`, `sau.audit_export_max_events`, `notify`."#,
    request_body(content = crate::routes::config::Config, description = "Sent with `Content-Type: application/json` (anything else is a 400)."),
    responses(
        (status = 200, description = "The configuration after the merge.", body = crate::routes::config::Config, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn put(State(state): State<AppState>, ApiJson(Config(patch)): ApiJson<Config>) -> ApiResult<Json<Config>> {
    let config = state
        .config()
        .ok_or_else(|| ApiError::not_ready("the configuration is still loading"))?;
    let merged = tokio::task::spawn_blocking(move || config.put(patch))
        .await
        .map_err(ApiError::internal)?;
    match merged {
        Ok(v) => Ok(Json(Config(v))),
        Err(ConfigError::Invalid(m)) => Err(ApiError::invalid(m)),
        Err(ConfigError::Failed(m)) => Err(ApiError::internal(m)),
    }
}

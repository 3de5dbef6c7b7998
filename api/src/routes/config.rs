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
                 `ai` (provider, model).",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Config {}

/// `GET /api/v1/config`: the configuration file as JSON.
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

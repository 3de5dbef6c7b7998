//! `GET` and `PUT /api/v1/config`.

use axum::Json;
use axum::extract::State;
use serde_json::Value;

use super::ApiJson;
use crate::config::ConfigError;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// `GET /api/v1/config`: the configuration file as JSON.
pub async fn get(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let config = state
        .config()
        .ok_or_else(|| ApiError::not_ready("the configuration is still loading"))?;
    Ok(Json(
        tokio::task::spawn_blocking(move || config.get())
            .await
            .map_err(ApiError::internal)?,
    ))
}

/// `PUT /api/v1/config`: deep-merge, validate (422 and nothing applied on
/// an unknown key or a bad value), write, apply.
pub async fn put(State(state): State<AppState>, ApiJson(patch): ApiJson<Value>) -> ApiResult<Json<Value>> {
    let config = state
        .config()
        .ok_or_else(|| ApiError::not_ready("the configuration is still loading"))?;
    let merged = tokio::task::spawn_blocking(move || config.put(patch))
        .await
        .map_err(ApiError::internal)?;
    match merged {
        Ok(v) => Ok(Json(v)),
        Err(ConfigError::Invalid(m)) => Err(ApiError::invalid(m)),
        Err(ConfigError::Failed(m)) => Err(ApiError::internal(m)),
    }
}

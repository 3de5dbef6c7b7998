//! `GET /api/v1/plugins` and `POST /api/v1/plugins/toggle`.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::ApiJson;
use crate::error::{ApiError, ApiResult};
use crate::plugins::{PluginInfo, ToggleError};
use crate::state::AppState;

fn plugin_json(p: &PluginInfo) -> Value {
    json!({
        "name": p.name,
        "display_name": p.display_name,
        "category": p.category,
        "color": p.color,
        "path": p.path,
        "active": p.active,
        "role": p.role,
        "status": p.status,
    })
}

/// The installed plugins, sorted by name. Listing checks each binary
/// against its manifest (hashing one that changed), so it runs off the
/// async workers.
pub async fn list(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    state.engine()?;
    let catalog = state.plugins();
    let mut plugins = tokio::task::spawn_blocking(move || catalog.map(|c| c.list()).unwrap_or_default())
        .await
        .map_err(ApiError::internal)?;
    plugins.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(Value::Array(plugins.iter().map(plugin_json).collect())))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToggleBody {
    name: String,
}

/// Flips a plugin between active and inactive; takes effect from the next scan.
pub async fn toggle(State(state): State<AppState>, ApiJson(body): ApiJson<ToggleBody>) -> ApiResult<Json<Value>> {
    state.engine()?;
    let Some(catalog) = state.plugins() else {
        return Err(ApiError::not_found(format!(
            "no installed plugin named {:?}",
            body.name
        )));
    };
    let name = body.name;
    let result = tokio::task::spawn_blocking(move || catalog.toggle(&name))
        .await
        .map_err(ApiError::internal)?;
    match result {
        Ok(p) => Ok(Json(plugin_json(&p))),
        Err(e @ ToggleError::NotFound(_)) => Err(ApiError::not_found(e.to_string())),
        Err(ToggleError::Failed(e)) => Err(ApiError::internal(e)),
    }
}

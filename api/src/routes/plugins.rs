//! `GET /api/v1/plugins` and `POST /api/v1/plugins/toggle`.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ApiJson;
use crate::error::{ApiError, ApiResult};
use crate::plugins::{PluginInfo, ToggleError};
use crate::state::AppState;
use crate::wire::listed_str;

listed_str! {
    /// Assigned by the registry team; controls workspace filtering in the terminal UI and the
    /// web UI.
    PluginCategory ["cloud", "database", "infrastructure", "saas", "iot", "devops", "security"]
}

listed_str! {
    PluginRole ["provider", "heuristic"]
}

/// An installed plugin (SPEC 4.2). Fields are declared in the order they
/// are written: by name.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Plugin {
    pub active: bool,
    pub category: PluginCategory,
    /// Hexadecimal colour with a leading `#`, for example `#ff9900`.
    pub color: String,
    pub display_name: String,
    /// The provider the plugin serves (`svc-plugin-<name>`).
    pub name: String,
    /// Filesystem path of the plugin binary.
    pub path: String,
    pub role: PluginRole,
    /// `verified`, or why the plugin cannot be used (not executable, hash mismatch, no manifest).
    pub status: String,
}

impl From<PluginInfo> for Plugin {
    fn from(p: PluginInfo) -> Self {
        Plugin {
            active: p.active,
            category: PluginCategory::from(p.category),
            color: p.color,
            display_name: p.display_name,
            name: p.name,
            path: p.path,
            role: PluginRole::from(p.role),
            status: p.status,
        }
    }
}

/// The installed plugins, sorted by name. Listing checks each binary
/// against its manifest (hashing one that changed), so it runs off the
/// async workers.
#[utoipa::path(
    get,
    path = "/plugins",
    operation_id = "listPlugins",
    tag = "plugins",
    summary = "The installed plugins (SPEC 4.2), sorted by name.",
    responses(
        (status = 200, description = "Every `svc-plugin-<name>` binary found in the plugin directory at start.", body = Vec<crate::routes::plugins::Plugin>, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn list(State(state): State<AppState>) -> ApiResult<Json<Vec<Plugin>>> {
    state.engine()?;
    let catalog = state.plugins();
    let mut plugins = tokio::task::spawn_blocking(move || catalog.map(|c| c.list()).unwrap_or_default())
        .await
        .map_err(ApiError::internal)?;
    plugins.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(plugins.into_iter().map(Plugin::from).collect()))
}

/// `POST /api/v1/plugins/toggle`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PluginToggleRequest)]
pub struct ToggleBody {
    name: String,
}

/// Flips a plugin between active and inactive; takes effect from the next scan.
#[utoipa::path(
    post,
    path = "/plugins/toggle",
    operation_id = "togglePlugin",
    tag = "plugins",
    summary = "Switch a plugin between active and inactive (persisted in `plugins.active`); effective from the next scan.",
    request_body(content = crate::routes::plugins::ToggleBody),
    responses(
        (status = 200, description = "The plugin as it now is.", body = crate::routes::plugins::Plugin, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn toggle(State(state): State<AppState>, ApiJson(body): ApiJson<ToggleBody>) -> ApiResult<Json<Plugin>> {
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
        Ok(p) => Ok(Json(Plugin::from(p))),
        Err(e @ ToggleError::NotFound(_)) => Err(ApiError::not_found(e.to_string())),
        Err(ToggleError::Failed(e)) => Err(ApiError::internal(e)),
    }
}

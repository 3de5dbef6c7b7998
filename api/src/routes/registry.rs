//! The registry (SPEC 4.3, 4.4, 4.10): search, installed packages,
//! install (`/registry/install` and `/plugins/install`), removal and
//! refresh of the cached index.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::ApiJson;
use super::query::{ApiQuery, Flag};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::plugins::{
    InstallOutcome, InstallRequest, InstalledPackage, PackageRegistry, RegistryFailure, RegistryFailureKind,
    RegistryListing,
};
use crate::state::AppState;

impl From<RegistryFailure> for ApiError {
    fn from(f: RegistryFailure) -> ApiError {
        match f.kind {
            RegistryFailureKind::BadRequest => ApiError::bad_request(f.message),
            RegistryFailureKind::NotFound => ApiError::not_found(f.message),
            RegistryFailureKind::Conflict => ApiError::conflict(f.message),
            RegistryFailureKind::Refused => ApiError::invalid(f.message),
            RegistryFailureKind::BadGateway => ApiError::new_status(StatusCode::BAD_GATEWAY, "bad_gateway", f.message),
            RegistryFailureKind::Internal => ApiError::internal(f.message),
        }
    }
}

fn registry(state: &AppState) -> ApiResult<std::sync::Arc<dyn PackageRegistry>> {
    state.engine()?;
    state
        .registry()
        .ok_or_else(|| ApiError::not_ready("the registry is not set up yet"))
}

/// Query parameters of `GET /api/v1/registry/search`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Words matched against name, description, type and category (case
    /// insensitive); empty or absent lists every package.
    #[serde(default)]
    q: Option<String>,
    /// Fetch the index again before answering.
    #[serde(default)]
    #[param(inline)]
    refresh: Flag,
}

#[utoipa::path(
    get,
    path = "/registry/search",
    operation_id = "searchRegistry",
    tag = "registry",
    summary = "Search the registry index (SPEC 4.4): every version of every package whose name, description, type or category contains `q`.",
    description = "The index is fetched from `registry.url` and cached in the data directory (`registry-index.json`) for `registry.cache_ttl`; `refresh=true` fetches it now. When the registry cannot be reached the cached index answers, with `from_cache`, its age and a `warning`.",
    params(SearchQuery),
    responses(
        (status = 200, description = "The matching packages, by name then version.", body = RegistryListing, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 409, description = "No registry is configured (`registry.url`; `conflict`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 502, description = "The registry cannot be reached and nothing is cached (`bad_gateway`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn search(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> ApiResult<Json<RegistryListing>> {
    let registry = registry(&state)?;
    let refresh = q.refresh.0;
    let q = q.q.unwrap_or_default();
    Ok(Json(registry.search(&q, refresh).await?))
}

#[utoipa::path(
    post,
    path = "/registry/refresh",
    operation_id = "refreshRegistry",
    tag = "registry",
    summary = "Fetch the registry index now and replace the cache; answers the whole index.",
    responses(
        (status = 200, description = "Every package of the fresh index.", body = RegistryListing, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 409, description = "No registry is configured (`registry.url`; `conflict`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 502, description = "The registry cannot be reached (`bad_gateway`); the cache is kept.", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn refresh(State(state): State<AppState>) -> ApiResult<Json<RegistryListing>> {
    let registry = registry(&state)?;
    let listing = registry.search("", true).await?;
    if listing.from_cache {
        return Err(ApiError::new_status(
            StatusCode::BAD_GATEWAY,
            "bad_gateway",
            listing
                .warning
                .unwrap_or_else(|| "the registry cannot be reached".to_owned()),
        ));
    }
    Ok(Json(listing))
}

#[utoipa::path(
    get,
    path = "/registry/installed",
    operation_id = "listInstalledPackages",
    tag = "registry",
    summary = "Installed plugins and policy packs (SPEC 4.4), with version, source, category and whether active.",
    responses(
        (status = 200, description = "Plugins, then policy packs, each by name.", body = Vec<InstalledPackage>, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn installed(State(state): State<AppState>) -> ApiResult<Json<Vec<InstalledPackage>>> {
    let registry = registry(&state)?;
    Ok(Json(registry.installed().await?))
}

/// `POST /api/v1/registry/install` and `POST /api/v1/plugins/install`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallBody {
    /// `name`, `name@vX.Y.Z` or `owner/name@vX.Y.Z` (a release of a source
    /// repository, through `registry.release_url`). Without a version the
    /// latest stable one is installed.
    name: String,
    /// Add a plugin to `plugins.active` (persisted) once installed.
    #[serde(default)]
    activate: bool,
    /// Replace an installed plugin whose binary fails verification.
    #[serde(default)]
    force: bool,
}

async fn do_install(
    state: AppState,
    caller: Caller,
    body: InstallBody,
    plugins_only: bool,
) -> ApiResult<Json<InstallOutcome>> {
    let registry = registry(&state)?;
    let request = InstallRequest {
        name: body.name,
        activate: body.activate,
        force: body.force,
        plugins_only,
    };
    Ok(Json(registry.install(request, &caller.name).await?))
}

#[utoipa::path(
    post,
    path = "/registry/install",
    operation_id = "installPackage",
    tag = "registry",
    summary = "Install a plugin or policy pack from the registry (SPEC 4.3, 4.10); a REGISTRY_INSTALL event.",
    description = "A plugin's binary for this os and architecture is downloaded, its SHA-256 checked against the manifest, its handshake checked by launching it once, and its category must have been assigned by the registry; only then is it installed (and, with `activate`, added to `plugins.active`). A policy pack's files are checked likewise and the pack is evaluated from the next scan. A refused package leaves nothing behind; the error names the check. Installing the version already installed changes nothing (`changed` false).",
    request_body(content = InstallBody),
    responses(
        (status = 200, description = "What was installed.", body = InstallOutcome, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, description = "Unknown package or version (`not_found`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 409, description = "The installed binary fails verification (`force` replaces it), or no registry is configured (`conflict`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, description = "A check refused the package: checksum, handshake, category, no binary for this os/arch, an invalid pack (`invalid`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 500, response = crate::openapi::Internal),
        (status = 502, description = "The registry or a download failed (`bad_gateway`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn install(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<InstallBody>,
) -> ApiResult<Json<InstallOutcome>> {
    do_install(state, caller, body, false).await
}

#[utoipa::path(
    post,
    path = "/plugins/install",
    operation_id = "installPlugin",
    tag = "plugins",
    summary = "Install a community plugin from the registry (SPEC 4.4, 4.10); as `/registry/install`, for plugins only.",
    request_body(content = InstallBody),
    responses(
        (status = 200, description = "What was installed.", body = InstallOutcome, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, description = "Unknown package or version (`not_found`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 409, description = "The installed binary fails verification (`force` replaces it), or no registry is configured (`conflict`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, description = "A check refused the package, or it is a policy pack (`invalid`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 500, response = crate::openapi::Internal),
        (status = 502, description = "The registry or a download failed (`bad_gateway`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn install_plugin(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<InstallBody>,
) -> ApiResult<Json<InstallOutcome>> {
    do_install(state, caller, body, true).await
}

/// `POST /api/v1/registry/remove`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RegistryRemoveRequest)]
pub struct RemoveBody {
    /// The installed plugin (with or without `svc-plugin-`) or policy pack.
    name: String,
}

#[utoipa::path(
    post,
    path = "/registry/remove",
    operation_id = "removePackage",
    tag = "registry",
    summary = "Uninstall a plugin (deactivated, binary and manifest removed) or a policy pack (its rules gone from the next scan); a REGISTRY_REMOVE event.",
    request_body(content = RemoveBody),
    responses(
        (status = 200, description = "The package as it was.", body = InstalledPackage, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, description = "Nothing of that name is installed (`not_found`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<RemoveBody>,
) -> ApiResult<Json<InstalledPackage>> {
    let registry = registry(&state)?;
    Ok(Json(registry.remove(&body.name, &caller.name).await?))
}

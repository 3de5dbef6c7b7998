//! `GET /api/v1/graph/nodes/{crn}/versions`: one resource through time,
//! every distinct version the graph store holds for it, newest first. It
//! answers for a resource deleted long ago too, as long as the store has it.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{blocking, path_text};
use crate::error::{ApiError, ApiResult};
use crate::routes::query::Limit;
use crate::routes::{ApiQuery, parse_crn};
use crate::state::AppState;
use crate::wire::{self, Crn, Node, NodeView};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionsQuery {
    /// Most versions listed, newest first.
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 1000>,
}

#[derive(Serialize, ToSchema)]
pub struct NodeVersions {
    pub crn: Crn,
    /// Newest first; each the node as that version had it, `valid_from` and `valid_to` (0: still
    /// current) in microseconds since the epoch.
    pub versions: Vec<Node>,
    /// Versions stored in all; more than listed when older ones lie beyond `limit`.
    pub total: u64,
}

/// `GET /api/v1/graph/nodes/{crn}/versions?limit=`.
#[utoipa::path(
    get,
    path = "/graph/nodes/{crn}/versions",
    operation_id = "getNodeVersions",
    tag = "time-travel",
    summary = "One node's versions through time, newest first.",
    description = "Every distinct version the graph store holds for the CRN (a change of any field, a deletion), newest first. A resource no longer in the live graph is answered from the store; 404 when the store never held it.",
    params(
        ("crn" = crate::wire::input::CrnInput, Path, description = crate::openapi::CRN_PATH),
        VersionsQuery,
    ),
    responses(
        (status = 200, description = "The versions.", body = NodeVersions, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn node_versions(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    ApiQuery(q): ApiQuery<VersionsQuery>,
) -> ApiResult<Response> {
    let crn = parse_crn(&path_text(path)?)?.to_string();
    let engine = state.engine()?.clone();
    blocking(move || {
        let history = engine.store().node_versions(&crn, q.limit.0)?;
        if history.versions.is_empty() {
            return Err(ApiError::not_found(format!("no node with crn {crn}")));
        }
        let r = engine.interner().reader();
        let versions = history
            .versions
            .iter()
            .map(|row| wire::node_with_crn(&NodeView::of_row(row), crn.clone(), &r))
            .collect();
        Ok(NodeVersions {
            crn: Crn(crn),
            versions,
            total: history.total,
        })
    })
    .await
}

//! Route handlers, one module per area, and the extractors they share.

pub mod anomalies;
pub mod assistant;
pub mod config;
pub mod graph;
pub mod history;
pub mod iac;
pub mod ledger;
pub mod notify;
pub mod plugins;
pub mod policies;
pub mod query;
pub mod registry;
pub mod remediation;
pub mod scan;
pub mod solver;
pub mod time_travel;
pub mod tokens;
pub mod traffic;
pub mod waste;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use svc_engine::{Crn, Graph, NodeId};

pub use query::ApiQuery;

use crate::error::ApiError;

/// `Json<T>` whose rejections are API errors (400, or 413 for an oversized body).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        // Every request body is a JSON object: an array or scalar is
        // refused even where it would fill the fields positionally.
        let value = match axum::Json::<serde_json::Value>::from_request(req, state).await {
            Ok(axum::Json(v)) => v,
            Err(e) => return Err(json_rejection(e)),
        };
        if !value.is_object() {
            return Err(ApiError::bad_request("malformed request body: expected a JSON object"));
        }
        serde_json::from_value(value)
            .map(ApiJson)
            .map_err(|e| ApiError::bad_request(format!("malformed request body: {e}")))
    }
}

fn json_rejection(e: JsonRejection) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::payload_too_large(format!(
            "request body is larger than {} bytes",
            crate::error::MAX_BODY_BYTES
        ));
    }
    ApiError::bad_request(format!("malformed request body: {}", e.body_text()))
}

/// Parses a CRN from a path or query (with or without the `svc` segment):
/// 422 when it does not parse.
pub fn parse_crn(raw: &str) -> Result<Crn, ApiError> {
    Crn::parse(raw).map_err(|e| ApiError::invalid(e.to_string()))
}

/// Finds a node by CRN text: 422 when the CRN is malformed, 404 when unknown.
pub fn find_node(graph: &Graph, raw: &str) -> Result<(Crn, NodeId), ApiError> {
    let crn = parse_crn(raw)?;
    let id = graph
        .find(&crn)
        .ok_or_else(|| ApiError::not_found(format!("no node with crn {crn}")))?;
    Ok((crn, id))
}

pub use crate::wire::{parse_rfc3339, rfc3339};

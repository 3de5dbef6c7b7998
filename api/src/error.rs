//! The one API error type: a status code plus the body fixed in DESIGN.md,
//! `{"error":{"code":..,"message":..,"details":{}}}`. Internal details go to
//! the log, never to the client.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Value,
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            details: json!({}),
            retry_after: None,
        }
    }
    /// Any other status with its code, for the few answers the list above
    /// does not cover (502 `bad_gateway`: a remote store refused a write).
    pub fn new_status(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(status, code, message)
    }
    /// 400: a malformed body or parameter.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    /// 409: an illegal move, or a scan already running.
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }
    pub fn payload_too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
    }
    /// 422: a well-formed request that names something invalid (a bad CRN, an unknown key).
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }
    pub fn rate_limited(message: impl Into<String>, retry_after_s: u64) -> ApiError {
        let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message);
        e.retry_after = Some(retry_after_s);
        e
    }
    pub fn not_ready(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "not_ready", message)
    }
    /// 500: logs `detail` and returns a generic message.
    pub fn internal(detail: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %detail, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the daemon log",
        )
    }
    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = details;
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message, "details": self.details}});
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

impl From<svc_engine::store::StoreError> for ApiError {
    fn from(e: svc_engine::store::StoreError) -> ApiError {
        ApiError::internal(e)
    }
}

impl From<svc_engine::store::ledger::LedgerError> for ApiError {
    fn from(e: svc_engine::store::ledger::LedgerError) -> ApiError {
        ApiError::internal(e)
    }
}

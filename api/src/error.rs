//! The one API error type: a status code plus the body fixed in DESIGN.md,
//! `{"error":{"code":..,"message":..,"details":{}}}`. Internal details go to
//! the log, never to the client.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Middleware: a request whose `Content-Length` is over [`MAX_BODY_BYTES`]
/// is answered 413 before any handler runs, so a route that reads no body
/// (`POST /api/v1/ledger/export`) refuses it too, and a client waiting on
/// `Expect: 100-continue` gets the answer instead of a closed connection.
pub async fn reject_oversized(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or_else(|| axum::body::HttpBody::size_hint(req.body()).exact());
    match declared {
        Some(n) if n > MAX_BODY_BYTES as u64 => {
            // A client that sends the body without waiting would see its
            // connection reset instead of the answer: a body up to
            // [`DRAIN_BYTES`] is read and dropped first.
            if n <= DRAIN_BYTES {
                drain(req.into_body()).await;
            }
            ApiError::payload_too_large(format!(
                "the request body of {n} bytes is over the limit of {MAX_BODY_BYTES} bytes"
            ))
            .into_response()
        }
        _ => next.run(req).await,
    }
}

/// Largest refused body read to its end before the 413 is sent; a larger
/// one is answered at once and its connection closed.
pub const DRAIN_BYTES: u64 = 16 * 1024 * 1024;

/// Reads `body` to its end (at most [`DRAIN_BYTES`] and 10 s), keeping nothing.
async fn drain(body: axum::body::Body) {
    use futures::StreamExt;
    let mut stream = body.into_data_stream();
    let mut read = 0u64;
    let reading = async {
        while let Some(Ok(data)) = stream.next().await {
            read += data.len() as u64;
            if read > DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), reading).await;
}

use crate::wire::{JsonObject, listed_str};

listed_str! {
    /// Machine-readable reason; one per status (405 and 426 answer `bad_request`).
    ErrorCode [
        "bad_request",
        "unauthorized",
        "forbidden",
        "not_found",
        "conflict",
        "payload_too_large",
        "invalid",
        "rate_limited",
        "not_ready",
        "internal",
        "bad_gateway",
        "insufficient_storage",
        "before_retention",
    ]
}

/// The body of every failed request.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Error)]
pub struct ErrorBody {
    #[schema(inline)]
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    /// Structured details; `{}` unless stated.
    pub details: JsonObject,
    /// Human-readable explanation.
    pub message: String,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Value,
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

/// Longest error message sent, in bytes. A message quoting what the client
/// sent (a value of a megabyte) is cut there, saying how long it was.
pub const MAX_MESSAGE_BYTES: usize = 2048;

fn bounded(message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &message[..end], message.len())
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: bounded(message.into()),
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
    /// 507: the disk is full; nothing of the request was written.
    pub fn insufficient_storage(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage", message)
    }
    /// A store that cannot be used now: 507 `insufficient_storage` for a
    /// full disk, else 503 `not_ready`. `what` says what was not done.
    pub fn storage(what: &str, fault: &svc_engine::store::Fault) -> ApiError {
        tracing::warn!(%fault, "{what}");
        let message = format!("{what}: {fault}");
        if fault.disk_full {
            ApiError::insufficient_storage(message)
        } else {
            ApiError::not_ready(message)
        }
    }
    /// 410 `before_retention`: a time before the graph history kept
    /// (`graph.history_retention`); the details name the earliest time
    /// still answered for.
    pub fn before_retention(at_us: u64, earliest_us: u64) -> ApiError {
        let (at, earliest) = (crate::wire::rfc3339(at_us), crate::wire::rfc3339(earliest_us));
        ApiError::new(
            StatusCode::GONE,
            "before_retention",
            format!(
                "{at} is before the graph history kept (graph.history_retention); the earliest time available is {earliest}"
            ),
        )
        .with_details(json!({ "earliest": earliest, "earliest_us": earliest_us }))
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

impl ApiError {
    /// The body answered for this error.
    pub fn body(self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: ErrorCode::from(self.code),
                details: JsonObject(self.details),
                message: self.message,
            },
        }
    }

    /// [`ApiError::body`] as JSON text.
    pub fn body_text(self) -> String {
        serde_json::to_string(&self.body()).unwrap_or_default()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, retry_after) = (self.status, self.retry_after);
        let mut resp = (status, Json(self.body())).into_response();
        if status == StatusCode::UNAUTHORIZED {
            // RFC 9110, 11.6.1: a 401 names the scheme that would be accepted.
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"svc\""),
            );
        }
        if let Some(s) = retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

impl From<svc_engine::store::StoreError> for ApiError {
    fn from(e: svc_engine::store::StoreError) -> ApiError {
        match &e {
            svc_engine::store::StoreError::Unavailable(f) => ApiError::storage("the graph store cannot be used now", f),
            svc_engine::store::StoreError::BeforeRetention { at_us, earliest_us } => {
                ApiError::before_retention(*at_us, *earliest_us)
            }
            // A cluster's standbys did not get the write (this node stopped
            // leading, or etcd is unreachable): retry, on the leader.
            svc_engine::store::StoreError::NotShipped { .. } => ApiError::not_ready(e.to_string()),
            _ => ApiError::internal(e),
        }
    }
}

impl From<svc_engine::store::ledger::LedgerError> for ApiError {
    fn from(e: svc_engine::store::ledger::LedgerError) -> ApiError {
        use svc_engine::store::ledger::LedgerError;
        match &e {
            LedgerError::Unavailable(f) => ApiError::storage("the ledger cannot be used now", f),
            // The ledger is damaged: nothing the client can change, and
            // nothing that goes away without an operator.
            LedgerError::Broken(_) | LedgerError::Corrupt(_) => {
                tracing::error!(error = %e, "ledger damaged");
                ApiError::not_ready(e.to_string())
            }
            LedgerError::NotReplicated(_) => ApiError::not_ready(e.to_string()),
            _ => ApiError::internal(e),
        }
    }
}

impl From<svc_engine::EngineError> for ApiError {
    fn from(e: svc_engine::EngineError) -> ApiError {
        use svc_engine::EngineError;
        match e {
            EngineError::Store(e) => e.into(),
            EngineError::Ledger(e) => e.into(),
            EngineError::Unrecorded { scan_seq, source } => {
                let what = format!(
                    "scan {scan_seq} committed, but its SCAN_COMPLETED is not recorded yet (it is once the ledger can be written)"
                );
                match source.fault() {
                    Some(f) => ApiError::storage(&what, f),
                    None => ApiError::internal(format!("{what}: {source}")),
                }
            }
            other => ApiError::internal(other),
        }
    }
}

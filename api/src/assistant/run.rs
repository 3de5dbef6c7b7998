//! Tool calls answered by the daemon's own routes, in process, as the
//! person who asked: the request carries the asker's credentials, so a
//! tool sees what its asker may see, through the same checks and limits as
//! any client.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, header};
use serde_json::Value;
use tower::ServiceExt;

use super::tools::{self, Method, ToolRequest};
use crate::auth::CSRF_HEADER;
use crate::state::AppState;

/// Most bytes of a tool's answer handed on; a longer one is cut and says so.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// Most bytes of a tool's answer read at all.
const MAX_READ_BYTES: usize = 64 * 1024 * 1024;

/// One tool call's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub ok: bool,
    /// The answer's JSON, or `{"error": ...}`.
    pub value: Value,
}

impl Outcome {
    pub fn failed(message: impl Into<String>) -> Outcome {
        Outcome {
            ok: false,
            value: serde_json::json!({ "error": message.into() }),
        }
    }
}

/// Runs tool calls for one question.
pub struct Executor {
    router: Router,
    credentials: Vec<(HeaderName, HeaderValue)>,
}

impl Executor {
    /// An executor over `state`'s routes with the credentials of the
    /// request that asked (`Authorization`, the session cookie and its
    /// CSRF header).
    pub fn new(state: &AppState, asked: &HeaderMap) -> Executor {
        let names = [
            header::AUTHORIZATION,
            header::COOKIE,
            HeaderName::from_static(CSRF_HEADER),
        ];
        let credentials = names
            .into_iter()
            .filter_map(|n| asked.get(&n).map(|v| (n, v.clone())))
            .collect();
        Executor {
            router: state.tool_router(),
            credentials,
        }
    }

    /// Calls tool `name` with `args`.
    pub async fn call(&self, name: &str, args: &Value) -> Outcome {
        match tools::request(name, args) {
            Ok(r) => self.send(&r).await,
            Err(e) => Outcome::failed(e.0),
        }
    }

    async fn send(&self, r: &ToolRequest) -> Outcome {
        let mut builder = Request::builder()
            .method(match r.method {
                Method::Get => axum::http::Method::GET,
                Method::Post => axum::http::Method::POST,
            })
            .uri(&r.path);
        for (n, v) in &self.credentials {
            builder = builder.header(n, v);
        }
        let body = match &r.body {
            Some(b) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        let request = match builder.body(body) {
            Ok(req) => req,
            Err(e) => return Outcome::failed(format!("cannot make the request {}: {e}", r.path)),
        };
        let response = match self.router.clone().oneshot(request).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        };
        let status = response.status();
        let bytes = match axum::body::to_bytes(response.into_body(), MAX_READ_BYTES).await {
            Ok(b) => b,
            Err(e) => return Outcome::failed(format!("cannot read the answer of {}: {e}", r.path)),
        };
        let value = if bytes.len() > MAX_ANSWER_BYTES {
            serde_json::json!({
                "truncated": true,
                "bytes": bytes.len(),
                "text": String::from_utf8_lossy(&bytes[..MAX_ANSWER_BYTES]),
            })
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        if status.is_success() {
            Outcome { ok: true, value }
        } else {
            let message = value["error"]["message"]
                .as_str()
                .or_else(|| value["message"].as_str())
                .map_or_else(|| format!("{status}"), |m| format!("{status}: {m}"));
            Outcome::failed(message)
        }
    }
}

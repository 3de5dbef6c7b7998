//! Authentication and authorization of `/api/v1/*` and `/events`.
//!
//! A request presents a token (`Authorization: Bearer <token>`) or a
//! dashboard session (the `svc_session` cookie, [`sessions`]). The
//! middleware [`authorize`] finds the route's least role in the table of
//! [`roles`], refuses a caller below it (403 `forbidden`), refuses a write
//! made with the cookie that lacks the session's CSRF token, and hands the
//! handler the [`Caller`]: the ledger's actor is the caller's token name.

pub mod credentials;
pub mod roles;
pub mod sessions;
pub mod tokens;

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;
pub use roles::{Access, Role};
pub use sessions::{CSRF_HEADER, SESSION_COOKIE};

/// Who made a request, as the middleware established it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The token's name: the actor of what the request records.
    pub name: String,
    pub role: Role,
    /// The session cookie value, when the request came with a session.
    pub session: Option<String>,
    /// The session's CSRF token, when the request came with a session.
    pub csrf: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Caller, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::unauthorized("missing credentials: send Authorization: Bearer <token>"))
    }
}

/// Requests that change nothing this node shares with a cluster, though
/// not sent with GET: a standby answers them.
const READS_BY_POST: &[&str] = &[
    "/api/v1/session",
    "/api/v1/policies/dry-run",
    "/api/v1/config/slack-test",
];

/// A standby's answer to a write (or, before it leads, to anything):
/// 503 `not_ready`, naming the leader.
fn standby_refusal(standby: &crate::state::Standby, write: bool) -> ApiError {
    let what = if write { "writes" } else { "requests" };
    match &standby.leader {
        Some((id, url)) => ApiError::not_ready(format!(
            "node {:?} is a cluster standby: send {what} to the leader {id:?} at {url}",
            standby.node_id
        ))
        .with_details(json!({"leader": {"id": id, "url": url}})),
        None => ApiError::not_ready(format!(
            "node {:?} is a cluster standby and no leader is elected yet: retry shortly",
            standby.node_id
        ))
        .with_details(json!({"leader": null})),
    }
}

/// Authenticates the request, checks its role against the route's, and
/// puts the [`Caller`] in its extensions.
pub async fn authorize(State(state): State<AppState>, mut req: Request, next: Next) -> Result<Response, ApiError> {
    let path = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| req.uri().path().to_owned(), |p| p.as_str().to_owned());
    let needed = match roles::access(req.method().as_str(), &path) {
        Access::Open => return Ok(next.run(req).await),
        Access::Least(role) => role,
    };
    let caller = authenticate(&state, req.headers())?;
    if caller.session.is_some() && !matches!(*req.method(), Method::GET | Method::HEAD) {
        let sent = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        let expected = caller.csrf.as_deref().unwrap_or_default();
        if !sent.is_some_and(|s| tokens_equal(s.as_bytes(), expected.as_bytes())) {
            return Err(ApiError::forbidden(format!(
                "missing or wrong CSRF token: a request signed in with the session cookie that changes something must send the session's csrf value in the {CSRF_HEADER} header"
            )));
        }
    }
    if caller.role < needed {
        return Err(ApiError::forbidden(format!(
            "{} {path} needs the {needed} role; token {:?} has the {} role",
            req.method(),
            caller.name,
            caller.role
        ))
        .with_details(json!({"required_role": needed.name(), "role": caller.role.name()})));
    }
    if let Some(standby) = state.standby() {
        // A standby follows the leader's stores and opens no engine until
        // elected; a leader that lost its lease still answers reads.
        let write = !matches!(*req.method(), Method::GET | Method::HEAD) && !READS_BY_POST.contains(&path.as_str());
        if write || !state.is_ready() {
            return Err(standby_refusal(&standby, write));
        }
    }
    req.extensions_mut().insert(caller);
    Ok(next.run(req).await)
}

/// The caller of a request: by bearer token, else by session cookie.
pub fn authenticate(state: &AppState, headers: &axum::http::HeaderMap) -> Result<Caller, ApiError> {
    let auth = &state.inner.auth;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    if let Some(token) = bearer {
        let holder = auth
            .tokens
            .authenticate(token)
            .ok_or_else(|| ApiError::unauthorized("invalid token"))?;
        return Ok(Caller {
            name: holder.name,
            role: holder.role,
            session: None,
            csrf: None,
        });
    }
    if let Some(id) = sessions::cookie(headers, SESSION_COOKIE) {
        let s = auth
            .sessions
            .touch(id)
            .ok_or_else(|| ApiError::unauthorized("the session is over or unknown: sign in again"))?;
        return Ok(Caller {
            name: s.name,
            role: s.role,
            session: Some(id.to_owned()),
            csrf: Some(s.csrf),
        });
    }
    Err(ApiError::unauthorized(
        "missing credentials: send Authorization: Bearer <token>",
    ))
}

/// The token of an `Authorization` value in the `Bearer` scheme, whose
/// name is case-insensitive (RFC 9110, 11.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}

fn tokens_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() || a.is_empty() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_scheme_name_is_case_insensitive() {
        for v in ["Bearer t", "bearer t", "BEARER t", "bEaReR   t "] {
            assert_eq!(super::bearer_token(v), Some("t"), "{v}");
        }
        for v in ["Basic t", "Bearert", "t", ""] {
            assert_eq!(super::bearer_token(v), None, "{v}");
        }
    }

    #[test]
    fn compares_tokens() {
        assert!(super::tokens_equal(b"abc", b"abc"));
        assert!(!super::tokens_equal(b"abc", b"abd"));
        assert!(!super::tokens_equal(b"abc", b"abcd"));
        assert!(!super::tokens_equal(b"", b""));
    }
}

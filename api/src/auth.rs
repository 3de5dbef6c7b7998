//! Bearer-token authentication for `/api/v1/*` and `/events`.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ApiError;
use crate::state::AppState;

/// Name of the cookie the dashboard link sets.
pub const TOKEN_COOKIE: &str = "svc_token";

/// Accepts `Authorization: Bearer <token>` or the `svc_token` cookie.
pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Result<Response, ApiError> {
    let headers = req.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            c.split(';')
                .find_map(|kv| kv.trim().strip_prefix(TOKEN_COOKIE).and_then(|r| r.strip_prefix('=')))
        });
    let presented = match (bearer, cookie) {
        (Some(t), _) | (None, Some(t)) => t,
        (None, None) => {
            return Err(ApiError::unauthorized(
                "missing credentials: send Authorization: Bearer <token>",
            ));
        }
    };
    if !constant_time_eq(presented.as_bytes(), state.inner.token.as_bytes()) {
        return Err(ApiError::unauthorized("invalid token"));
    }
    Ok(next.run(req).await)
}

/// The token of an `Authorization` value in the `Bearer` scheme, whose
/// name is case-insensitive (RFC 9110, 11.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
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
        assert!(super::constant_time_eq(b"abc", b"abc"));
        assert!(!super::constant_time_eq(b"abc", b"abd"));
        assert!(!super::constant_time_eq(b"abc", b"abcd"));
    }
}

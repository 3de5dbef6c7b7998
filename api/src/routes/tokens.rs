//! API tokens (admin only) and dashboard sessions.
//!
//! `GET/POST /api/v1/tokens`, `DELETE /api/v1/tokens/{name}`: named tokens
//! with a role; a created token's plaintext is answered once and never
//! stored. Each create and revoke is a ledger event (`TOKEN_CREATED`,
//! `TOKEN_REVOKED`) whose actor is the caller's token.
//!
//! `POST /api/v1/session` exchanges a token for a session cookie (the
//! dashboard's sign-in), `GET` tells the caller who they are, `DELETE`
//! signs out.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use svc_engine::store::ledger::events::{NewEvent, TokenCreated, TokenRevoked};
use utoipa::ToSchema;

use super::ApiJson;
use crate::auth::tokens::{Entry, TokenError};
use crate::auth::{Caller, Role, SESSION_COOKIE};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

fn api_error(e: TokenError) -> ApiError {
    match e {
        TokenError::Invalid(m) => ApiError::invalid(m),
        TokenError::Conflict(m) => ApiError::conflict(m),
        TokenError::NotFound(m) => ApiError::not_found(m),
        e @ TokenError::Replicate(_) => ApiError::not_ready(e.to_string()),
        e @ (TokenError::Write { .. } | TokenError::Read { .. } | TokenError::Random(_)) => ApiError::internal(e),
    }
}

/// A token as listed: never its hash or its plaintext.
#[derive(Serialize, ToSchema)]
pub struct TokenInfo {
    pub name: String,
    pub role: Role,
    /// When it was created, RFC 3339.
    #[schema(format = DateTime)]
    pub created: String,
}

impl From<&Entry> for TokenInfo {
    fn from(e: &Entry) -> TokenInfo {
        TokenInfo {
            name: e.name.clone(),
            role: e.role,
            created: e.created.clone(),
        }
    }
}

/// Every token, by name.
#[derive(Serialize, ToSchema)]
pub struct TokenList {
    pub count: usize,
    pub tokens: Vec<TokenInfo>,
}

/// `POST /api/v1/tokens`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub name: String,
    /// `viewer`, `operator` or `admin`.
    pub role: String,
}

/// A created token, with its plaintext: shown this once.
#[derive(Serialize, ToSchema)]
pub struct CreatedToken {
    pub name: String,
    pub role: Role,
    #[schema(format = DateTime)]
    pub created: String,
    /// The token: send it as `Authorization: Bearer <token>`. It is not stored and cannot be shown again.
    pub token: String,
}

/// `GET /api/v1/tokens`.
#[utoipa::path(
    get,
    path = "/tokens",
    operation_id = "listTokens",
    tag = "tokens",
    summary = "Every API token: name, role and creation time (never a hash or a token).",
    responses(
        (status = 200, description = "The tokens, by name.", body = TokenList, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
    ),
)]
pub async fn list(State(state): State<AppState>) -> Json<TokenList> {
    let tokens: Vec<TokenInfo> = state.inner.auth.tokens.list().iter().map(TokenInfo::from).collect();
    Json(TokenList {
        count: tokens.len(),
        tokens,
    })
}

/// `POST /api/v1/tokens`.
#[utoipa::path(
    post,
    path = "/tokens",
    operation_id = "createToken",
    tag = "tokens",
    summary = "Create a named token with a role; the answer holds the token, shown this once (TOKEN_CREATED event).",
    request_body(content = NewToken),
    responses(
        (status = 201, description = "The token, with its plaintext.", body = CreatedToken, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 409, description = "A token with that name exists (`conflict`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 413, response = crate::openapi::PayloadTooLarge),
        (status = 422, description = "A bad name or role (`invalid`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
        (status = 507, response = crate::openapi::InsufficientStorage),
    ),
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(b): ApiJson<NewToken>,
) -> ApiResult<Response> {
    let engine = state.engine()?.clone();
    let role = Role::parse(&b.role)
        .ok_or_else(|| ApiError::invalid(format!("unknown role {:?}: expected viewer, operator or admin", b.role)))?;
    let st = state.clone();
    let created = tokio::task::spawn_blocking(move || -> ApiResult<CreatedToken> {
        let tokens = &st.inner.auth.tokens;
        let (entry, secret) = tokens.create(&b.name, role).map_err(api_error)?;
        let event = NewEvent::of(
            None,
            &caller.name,
            format!("{} created token {:?} with role {role}", caller.name, entry.name),
            &TokenCreated {
                name: entry.name.clone(),
                role: role.name().to_owned(),
            },
        );
        if let Err(e) = engine.ledger().append_one(event) {
            // Unrecorded, the token must not work.
            if let Err(undo) = tokens.undo(&entry, true) {
                tracing::error!(error = %undo, token = %entry.name, "cannot remove a token whose creation was not recorded");
            }
            return Err(e.into());
        }
        Ok(CreatedToken {
            name: entry.name,
            role,
            created: entry.created,
            token: secret,
        })
    })
    .await
    .map_err(ApiError::internal)??;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

/// `DELETE /api/v1/tokens/{name}`.
#[utoipa::path(
    delete,
    path = "/tokens/{name}",
    operation_id = "revokeToken",
    tag = "tokens",
    summary = "Revoke a token: it is refused from the next request on, and its dashboard sessions end (TOKEN_REVOKED event). The admin token of the token file cannot be revoked (409).",
    params(("name" = String, Path, description = "The token's name.")),
    responses(
        (status = 200, description = "The revoked token.", body = TokenInfo, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, description = "No token has that name (`not_found`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 409, description = "The admin token cannot be revoked (`conflict`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
        (status = 507, response = crate::openapi::InsufficientStorage),
    ),
)]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<TokenInfo>> {
    let engine = state.engine()?.clone();
    let st = state.clone();
    let entry = tokio::task::spawn_blocking(move || -> ApiResult<Entry> {
        let auth = &st.inner.auth;
        let entry = auth.tokens.revoke(&name).map_err(api_error)?;
        let ended = auth.sessions.close_all_of(&entry.name);
        let event = NewEvent::of(
            None,
            &caller.name,
            format!("{} revoked token {:?} ({} sessions ended)", caller.name, entry.name, ended),
            &TokenRevoked {
                name: entry.name.clone(),
                role: entry.role.name().to_owned(),
                sessions_ended: ended as u64,
            },
        );
        if let Err(e) = engine.ledger().append_one(event) {
            // Unrecorded, the revocation is undone; its sessions stay ended.
            if let Err(undo) = auth.tokens.undo(&entry, false) {
                tracing::error!(error = %undo, token = %entry.name, "cannot restore a token whose revocation was not recorded");
            }
            return Err(e.into());
        }
        Ok(entry)
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(Json(TokenInfo::from(&entry)))
}

/// `POST /api/v1/session`: a token to exchange for a session.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    pub token: String,
}

/// Who the caller is; `csrf` is the value a session's writes send in `X-CSRF-Token`.
#[derive(Serialize, ToSchema)]
pub struct SessionInfo {
    /// The token's name.
    pub name: String,
    pub role: Role,
    /// The session's CSRF token; null for a caller with a bearer token.
    pub csrf: Option<String>,
    /// The daemon's version (`svc version` shows it beside the client's).
    pub daemon_version: &'static str,
}

/// Whether a session was ended.
#[derive(Serialize, ToSchema)]
pub struct SignedOut {
    pub ended: bool,
}

/// `Set-Cookie` for session `id`; `Max-Age=0` with an empty id clears it.
fn session_cookie(id: &str, headers: &HeaderMap) -> Result<HeaderValue, ApiError> {
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    let mut c = format!("{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/");
    if id.is_empty() {
        c.push_str("; Max-Age=0");
    }
    if secure {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).map_err(ApiError::internal)
}

/// `POST /api/v1/session`: sign in.
#[utoipa::path(
    post,
    path = "/session",
    operation_id = "signIn",
    tag = "tokens",
    summary = "Exchange a token for a dashboard session: the answer sets the `svc_session` cookie (HttpOnly, SameSite=Strict) and holds the CSRF token writes made with it must send as `X-CSRF-Token`.",
    request_body(content = SignIn),
    responses(
        (status = 200, description = "Signed in; `Set-Cookie` holds the session.", body = SessionInfo, content_type = "application/json",
            headers(("Set-Cookie" = String, description = "`svc_session=<id>; HttpOnly; SameSite=Strict; Path=/` (`Secure` behind https)."))),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 413, response = crate::openapi::PayloadTooLarge),
    ),
)]
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(b): ApiJson<SignIn>,
) -> ApiResult<Response> {
    let auth = &state.inner.auth;
    let holder = auth
        .tokens
        .authenticate(b.token.trim())
        .ok_or_else(|| ApiError::unauthorized("invalid token"))?;
    let (id, session) = auth
        .sessions
        .open(&holder.name, holder.role)
        .map_err(ApiError::internal)?;
    let body = SessionInfo {
        name: session.name,
        role: session.role,
        csrf: Some(session.csrf),
        daemon_version: env!("CARGO_PKG_VERSION"),
    };
    Ok(([(header::SET_COOKIE, session_cookie(&id, &headers)?)], Json(body)).into_response())
}

/// `GET /api/v1/session`: who am I.
#[utoipa::path(
    get,
    path = "/session",
    operation_id = "getSession",
    tag = "tokens",
    summary = "The caller: its token's name and role, and the session's CSRF token (null for a bearer token).",
    responses(
        (status = 200, description = "The caller.", body = SessionInfo, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
    ),
)]
pub async fn current(caller: Caller) -> Json<SessionInfo> {
    Json(SessionInfo {
        name: caller.name,
        role: caller.role,
        csrf: caller.csrf,
        daemon_version: env!("CARGO_PKG_VERSION"),
    })
}

/// `DELETE /api/v1/session`: sign out.
#[utoipa::path(
    delete,
    path = "/session",
    operation_id = "signOut",
    tag = "tokens",
    summary = "Sign out: the caller's session ends and its cookie is cleared (a bearer caller has none: `ended` is false).",
    responses(
        (status = 200, description = "Signed out; `Set-Cookie` clears the cookie.", body = SignedOut, content_type = "application/json"),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
    ),
)]
pub async fn sign_out(State(state): State<AppState>, headers: HeaderMap, caller: Caller) -> ApiResult<Response> {
    let ended = caller
        .session
        .as_deref()
        .is_some_and(|id| state.inner.auth.sessions.close(id));
    Ok((
        [(header::SET_COOKIE, session_cookie("", &headers)?)],
        Json(SignedOut { ended }),
    )
        .into_response())
}

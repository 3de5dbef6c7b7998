//! `POST /api/v1/config/slack-test`: a test notification, sent now.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::query::ApiQuery;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::notify::TestOutcome;
use crate::state::AppState;

/// Query parameters of `POST /api/v1/config/slack-test`.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SlackTestQuery {
    /// Also send to every generic webhook (`notify.webhooks`), and accept a
    /// configuration with webhooks but no Slack webhook.
    #[serde(default)]
    all: bool,
}

/// What each destination answered.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SlackTest {
    /// Whether every destination answered 2xx.
    pub delivered: bool,
    /// One entry per destination, Slack first.
    pub results: Vec<TestOutcome>,
}

/// Sends one test message to the configured Slack webhook (with
/// `all=true`, to every webhook too), once, without retries, and answers
/// with what each receiver said.
#[utoipa::path(
    post,
    path = "/config/slack-test",
    operation_id = "testNotifications",
    tag = "config",
    summary = "Send a test notification to the configured chat webhook now and report the receiver's answer.",
    description = "Sends one message, once and without retries, each attempt cut at `notify.timeout`: Slack's incoming-webhook JSON to `notify.slack_webhook`, and with `all=true` the signed JSON body to each of `notify.webhooks` too. A receiver that refuses, fails or does not answer is still a 200: `delivered` is false and `status`, `body` (its first 512 characters) and `error` say what happened; the attempt is counted in `svc_notifications_total` and `svc_notification_failures_total` with kind `test`. 409 when no destination is configured. No request body is read.",
    params(SlackTestQuery),
    responses(
        (status = 200, description = "What each destination answered.", body = crate::routes::notify::SlackTest, content_type = "application/json"),
        (status = 400, response = crate::openapi::BadRequest),
        (status = 401, response = crate::openapi::Unauthorized),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 409, description = "No destination is configured (`conflict`): set `notify.slack_webhook` (or, with `all=true`, `notify.webhooks`).", body = crate::error::ErrorBody, content_type = "application/json"),
        (status = 500, response = crate::openapi::Internal),
        (status = 503, response = crate::openapi::NotReady),
    ),
)]
pub async fn slack_test(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<SlackTestQuery>,
) -> ApiResult<Json<SlackTest>> {
    let notifier = state
        .notifier()
        .ok_or_else(|| ApiError::not_ready("the notifier is still starting"))?;
    let results = notifier.test(q.all, &caller.name).await.ok_or_else(|| {
        ApiError::conflict(if q.all {
            "no notification destination is configured: set notify.slack_webhook or notify.webhooks"
        } else {
            "no Slack webhook is configured: set notify.slack_webhook (or send all=true to test notify.webhooks)"
        })
    })?;
    Ok(Json(SlackTest {
        delivered: results.iter().all(|r| r.delivered),
        results,
    }))
}

//! Sending: one HTTP attempt to one destination, and the retry loop around
//! it (exponential backoff, `Retry-After` honoured on 429).

use std::time::{Duration, Instant};

use http_client::Client;

use super::message::{Notice, signature};
use super::settings::{Destination, NotifySettings};

/// The longest `Retry-After` obeyed; a longer one waits this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// How much of a receiver's answer is kept for the test route.
pub const ANSWER_KEEP: usize = 512;

/// How one attempt went.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    /// A 2xx answer.
    pub delivered: bool,
    /// The receiver's status code, if it answered.
    pub status: Option<u16>,
    /// The start of its answer's body.
    pub body: String,
    /// Why it failed, if it did.
    pub error: Option<String>,
    pub duration: Duration,
    /// `Retry-After` of a 429 or 503.
    pub retry_after: Option<Duration>,
}

impl Attempt {
    /// Whether trying again may help: no answer (connection refused,
    /// timeout), 408, 429 and 5xx. Any other 4xx (a revoked or mistyped
    /// webhook) will fail again.
    pub fn retryable(&self) -> bool {
        match self.status {
            None => true,
            Some(s) => s == 408 || s == 429 || s >= 500,
        }
    }

    /// The `reason` label of a failed attempt.
    pub fn reason(&self) -> &'static str {
        match self.status {
            Some(429) => "rate_limited",
            Some(s) if s >= 500 => "server_error",
            Some(_) => "client_error",
            None if self.error.as_deref().is_some_and(|e| e.contains("timed out")) => "timeout",
            None => "connection",
        }
    }
}

/// The HTTP client of every delivery: rustls on the aws-lc-rs provider,
/// certificates checked against the system's roots, no redirects followed
/// (a webhook that moved is a configuration to fix, and a redirect would
/// carry the signed body elsewhere). `HTTPS_PROXY`/`NO_PROXY` apply.
pub fn client() -> Result<Client, String> {
    Client::builder()
        .redirect(http_client::redirect::Policy::none())
        .user_agent(concat!("svc/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// One attempt to deliver `notice` to `to`, cut at `timeout`.
pub async fn attempt(client: &Client, to: &Destination, notice: &Notice, settings: &NotifySettings) -> Attempt {
    let started = Instant::now();
    let (url, body) = match to {
        Destination::Slack { url } => (url, notice.slack_body(settings.dashboard_url.as_deref())),
        Destination::Webhook(w) => (&w.url, notice.webhook_body()),
    };
    let body = body.to_string();
    let mut request = client
        .post(url)
        .timeout(settings.timeout)
        .header(http_client::header::CONTENT_TYPE, "application/json");
    if let Destination::Webhook(w) = to {
        request = request
            .header("X-Svc-Signature", signature(&w.secret, body.as_bytes()))
            .header("X-Svc-Timestamp", notice.timestamp.to_string())
            .header("X-Svc-Delivery", &notice.id)
            .header("X-Svc-Event", notice.kind.name());
    }
    let answer = tokio::time::timeout(settings.timeout, async {
        let response = request.body(body).send().await?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(http_client::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
        let text = response.text().await.unwrap_or_default();
        Ok::<_, http_client::Error>((status, retry_after, text))
    })
    .await;
    let duration = started.elapsed();
    match answer {
        Ok(Ok((status, retry_after, text))) => {
            let delivered = (200..300).contains(&status);
            Attempt {
                delivered,
                status: Some(status),
                body: super::message::clip(text.trim(), ANSWER_KEEP),
                error: (!delivered).then(|| format!("the receiver answered {status}")),
                duration,
                retry_after,
            }
        }
        Ok(Err(e)) => Attempt {
            delivered: false,
            status: None,
            body: String::new(),
            error: Some(describe(e, settings.timeout)),
            duration,
            retry_after: None,
        },
        Err(_) => Attempt {
            delivered: false,
            status: None,
            body: String::new(),
            error: Some(format!("timed out after {:?}", settings.timeout)),
            duration,
            retry_after: None,
        },
    }
}

/// A transport error in words, without the URL (which may hold a secret).
fn describe(e: http_client::Error, timeout: Duration) -> String {
    let e = e.without_url();
    if e.is_timeout() {
        return format!("timed out after {timeout:?}");
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The pause before the next attempt after `attempt` (1-based) failed as
/// `last` did: the receiver's `Retry-After` on 429/503 when longer than
/// the backoff.
pub fn pause(settings: &NotifySettings, attempt: u32, last: &Attempt) -> Duration {
    let backoff = settings.pause_after(attempt);
    match (last.status, last.retry_after) {
        (Some(429 | 503), Some(after)) => after.max(backoff),
        _ => backoff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(status: Option<u16>, retry_after: Option<u64>) -> Attempt {
        Attempt {
            delivered: false,
            status,
            body: String::new(),
            error: Some("x".into()),
            duration: Duration::ZERO,
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn which_failures_are_retried_and_how_long_after() {
        assert!(failed(None, None).retryable());
        assert!(failed(Some(500), None).retryable());
        assert!(failed(Some(429), None).retryable());
        assert!(!failed(Some(404), None).retryable());
        assert_eq!(failed(Some(503), None).reason(), "server_error");
        assert_eq!(failed(Some(403), None).reason(), "client_error");
        let s = NotifySettings::default();
        assert_eq!(pause(&s, 1, &failed(Some(500), None)), Duration::from_secs(1));
        assert_eq!(pause(&s, 3, &failed(None, None)), Duration::from_secs(4));
        assert_eq!(pause(&s, 1, &failed(Some(429), Some(7))), Duration::from_secs(7));
        assert_eq!(pause(&s, 4, &failed(Some(429), Some(2))), Duration::from_secs(8));
        assert_eq!(pause(&s, 1, &failed(Some(500), Some(7))), Duration::from_secs(1));
    }
}

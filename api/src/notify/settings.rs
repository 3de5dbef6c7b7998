//! What `[notify]` of `config.toml` asks for, once validated by the
//! daemon's configuration: destinations, the kinds each one receives, and
//! the delivery policy (timeout, attempts, backoff).

use std::collections::BTreeSet;
use std::time::Duration;

/// The kinds of notification an operator can select (`notify.events`,
/// and per webhook `events`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A scan's waste rose by more than `notify.waste_threshold_usd`.
    Waste,
    /// Remediation items newly waiting for an operator's approval.
    Approval,
    /// A saga failed and its committed steps were compensated.
    Saga,
    /// A scan found cost anomalies.
    Anomaly,
    /// Verification found the ledger's hash chain broken.
    LedgerChain,
    /// A provider or heuristic plugin failed a scan.
    Plugin,
    /// A test message (`POST /api/v1/config/slack-test`); never selected.
    Test,
}

impl Kind {
    /// The selectable kinds, in the order the documentation lists them.
    pub const SELECTABLE: [Kind; 6] = [
        Kind::Waste,
        Kind::Approval,
        Kind::Saga,
        Kind::Anomaly,
        Kind::LedgerChain,
        Kind::Plugin,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Kind::Waste => "waste",
            Kind::Approval => "approval",
            Kind::Saga => "saga",
            Kind::Anomaly => "anomaly",
            Kind::LedgerChain => "ledger_chain",
            Kind::Plugin => "plugin",
            Kind::Test => "test",
        }
    }

    /// A selectable kind by its name.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::SELECTABLE.into_iter().find(|k| k.name() == name)
    }
}

/// A generic webhook: JSON bodies signed with HMAC-SHA256 of `secret`.
#[derive(Clone, Debug, PartialEq)]
pub struct Webhook {
    /// Its `destination` label in metrics and answers (`webhook-1` when
    /// the configuration names none).
    pub name: String,
    pub url: String,
    pub secret: String,
    /// The kinds it receives; `None`: those of `notify.events`.
    pub events: Option<BTreeSet<Kind>>,
}

/// The destination label of the Slack webhook.
pub const SLACK: &str = "slack";

/// `[notify]`, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct NotifySettings {
    pub slack_webhook: Option<String>,
    pub webhooks: Vec<Webhook>,
    /// The kinds sent at all (default: every selectable kind).
    pub events: BTreeSet<Kind>,
    /// Monthly USD by which a scan's waste must rise for a `waste` notice.
    pub waste_threshold_usd: f64,
    /// How long one delivery attempt may take, connection included.
    pub timeout: Duration,
    /// Attempts per notice and destination, the first included.
    pub max_attempts: u32,
    /// The pause after the first failed attempt, doubled after each
    /// further one up to `backoff_max`.
    pub backoff: Duration,
    pub backoff_max: Duration,
    /// The dashboard's base URL, for links in messages (none: no links).
    pub dashboard_url: Option<String>,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
pub const MAX_ATTEMPTS_LIMIT: u32 = 20;
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(1);
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);
pub const DEFAULT_WASTE_THRESHOLD_USD: f64 = 100.0;

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings {
            slack_webhook: None,
            webhooks: Vec::new(),
            events: Kind::SELECTABLE.into_iter().collect(),
            waste_threshold_usd: DEFAULT_WASTE_THRESHOLD_USD,
            timeout: DEFAULT_TIMEOUT,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff: DEFAULT_BACKOFF,
            backoff_max: DEFAULT_BACKOFF_MAX,
            dashboard_url: None,
        }
    }
}

/// One place a notice goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Destination {
    Slack { url: String },
    Webhook(Webhook),
}

impl Destination {
    /// The `destination` label.
    pub fn name(&self) -> &str {
        match self {
            Destination::Slack { .. } => SLACK,
            Destination::Webhook(w) => &w.name,
        }
    }
}

impl NotifySettings {
    /// Whether any destination is configured.
    pub fn any_destination(&self) -> bool {
        self.slack_webhook.is_some() || !self.webhooks.is_empty()
    }

    /// Whether some destination receives `kind`.
    pub fn wants(&self, kind: Kind) -> bool {
        !self.destinations_for(kind).is_empty()
    }

    /// The destinations that receive `kind`: Slack when `notify.events`
    /// selects it, each webhook by its own `events` (else `notify.events`).
    pub fn destinations_for(&self, kind: Kind) -> Vec<Destination> {
        let mut out = Vec::new();
        if let Some(url) = &self.slack_webhook
            && self.events.contains(&kind)
        {
            out.push(Destination::Slack { url: url.clone() });
        }
        for w in &self.webhooks {
            if w.events.as_ref().unwrap_or(&self.events).contains(&kind) {
                out.push(Destination::Webhook(w.clone()));
            }
        }
        out
    }

    /// Every destination, whatever kinds it takes (test messages).
    pub fn all_destinations(&self) -> Vec<Destination> {
        let mut out = Vec::new();
        if let Some(url) = &self.slack_webhook {
            out.push(Destination::Slack { url: url.clone() });
        }
        out.extend(self.webhooks.iter().cloned().map(Destination::Webhook));
        out
    }

    /// The pause before attempt `attempt + 1` after attempt `attempt`
    /// (1-based) failed: `backoff`, doubled per attempt, at most `backoff_max`.
    pub fn pause_after(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        self.backoff.saturating_mul(1u32 << doublings).min(self.backoff_max)
    }
}

/// Checks a destination URL: absolute `http` or `https` with a host.
pub fn check_url(key: &str, url: &str) -> Result<(), String> {
    let parsed = http_client::Url::parse(url).map_err(|e| format!("{key} {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "{key} {url:?} must be an http:// or https:// URL, not {}:",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("{key} {url:?} has no host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let s = NotifySettings::default();
        let pauses: Vec<u64> = (1..=7).map(|a| s.pause_after(a).as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(s.pause_after(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn destinations_follow_the_selected_kinds() {
        let s = NotifySettings {
            slack_webhook: Some("https://hooks.slack.com/services/T/B/x".into()),
            webhooks: vec![Webhook {
                name: "pager".into(),
                url: "https://pager.example/hook".into(),
                secret: "s".into(),
                events: Some([Kind::LedgerChain].into_iter().collect()),
            }],
            events: [Kind::Waste, Kind::LedgerChain].into_iter().collect(),
            ..NotifySettings::default()
        };
        let names = |k| {
            s.destinations_for(k)
                .iter()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Kind::Waste), ["slack"]);
        assert_eq!(names(Kind::LedgerChain), ["slack", "pager"]);
        assert!(names(Kind::Saga).is_empty());
        assert!(!s.wants(Kind::Plugin));
        assert_eq!(s.all_destinations().len(), 2);
    }

    #[test]
    fn urls_are_checked() {
        assert!(check_url("notify.slack_webhook", "https://hooks.slack.com/services/a").is_ok());
        assert!(check_url("notify.slack_webhook", "http://127.0.0.1:9/x").is_ok());
        for bad in ["hooks.slack.com/x", "ftp://a/b", "https://", "not a url"] {
            let e = check_url("notify.slack_webhook", bad).unwrap_err();
            assert!(e.starts_with("notify.slack_webhook"), "{bad}: {e}");
        }
    }
}

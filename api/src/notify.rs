//! Notifications (`[notify]`): Slack incoming-webhook messages and signed
//! generic webhooks for the kinds an operator selects.
//!
//! The engine side never waits on the network: the scan and ledger
//! listeners turn what happened into notices ([`triggers`]) and put them on
//! a bounded queue with `try_send`; when the queue is full the notice is
//! dropped and counted. One task ([`Notifier::run`]) takes notices in
//! order and delivers each to its destinations concurrently, every
//! destination with its own retries ([`deliver`]): up to `max_attempts`,
//! exponential backoff from `backoff` to `backoff_max`, `Retry-After`
//! honoured on 429, each attempt cut at `timeout`. Outcomes and failed
//! attempts are counted in `svc_notifications_total` and
//! `svc_notification_failures_total` ([`crate::metrics::notify`]).

pub mod deliver;
pub mod message;
pub mod settings;
pub mod triggers;

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde_json::json;
use svc_engine::Engine;
use tokio::sync::mpsc;

use crate::metrics::notify::NotifyMetrics;
pub use message::Notice;
pub use settings::{Destination, Kind, NotifySettings, Webhook};
use triggers::Triggers;

/// Notices waiting for delivery, at most.
pub const QUEUE: usize = 256;
/// How often the ledger's chain state is looked at.
const CHAIN_CHECK: Duration = Duration::from_secs(1);

pub struct Notifier {
    settings: RwLock<Arc<NotifySettings>>,
    tx: mpsc::Sender<Notice>,
    /// Taken by the delivery task; a task started again takes it again.
    rx: tokio::sync::Mutex<mpsc::Receiver<Notice>>,
    triggers: Mutex<Triggers>,
    metrics: NotifyMetrics,
    client: http_client::Client,
    engine: OnceLock<Weak<Engine>>,
}

/// How a test message went at one destination (`POST /api/v1/config/slack-test`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TestOutcome {
    /// `slack`, or the webhook's name.
    pub destination: String,
    /// Whether the receiver answered 2xx.
    pub delivered: bool,
    /// The receiver's status code; null when it did not answer.
    pub status: Option<u16>,
    /// The start of the receiver's answer (at most 512 characters).
    pub body: String,
    /// Why it was not delivered; null when it was.
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl Notifier {
    pub fn new(settings: NotifySettings, metrics: NotifyMetrics) -> Result<Arc<Notifier>, String> {
        let (tx, rx) = mpsc::channel(QUEUE);
        Ok(Arc::new(Notifier {
            settings: RwLock::new(Arc::new(settings)),
            tx,
            rx: tokio::sync::Mutex::new(rx),
            triggers: Mutex::new(Triggers::default()),
            metrics,
            client: deliver::client()?,
            engine: OnceLock::new(),
        }))
    }

    /// The settings now in force.
    pub fn settings(&self) -> Arc<NotifySettings> {
        self.settings.read().clone()
    }

    /// Applies new settings (`PUT /api/v1/config`): from the next notice
    /// on, including those already queued.
    pub fn set_settings(&self, s: NotifySettings) {
        *self.settings.write() = Arc::new(s);
    }

    /// Feeds the notifier from `engine`: its scan reports and ledger
    /// events. Starts from the engine's last scan, so a restart reports
    /// only what changes from then on.
    pub fn attach(self: &Arc<Self>, engine: &Arc<Engine>) {
        *self.triggers.lock() = Triggers::after(engine.last_report().as_ref());
        let _ = self.engine.set(Arc::downgrade(engine));
        let (me, weak_engine) = (Arc::downgrade(self), Arc::downgrade(engine));
        engine.add_scan_listener(Box::new(move |report| {
            let Some(me) = me.upgrade() else { return };
            let anomalies = weak_engine.upgrade().map(|e| e.anomalies());
            let settings = me.settings();
            let notices = me.triggers.lock().scan(report, anomalies.as_deref(), &settings);
            for n in notices {
                me.enqueue(n);
            }
        }));
        let me = Arc::downgrade(self);
        engine.ledger().add_listener(Box::new(move |e| {
            if e.event_type != "EXECUTION_ROLLBACK" {
                return;
            }
            let Some(me) = me.upgrade() else { return };
            let settings = me.settings();
            let notice = me.triggers.lock().event(e, &settings);
            if let Some(n) = notice {
                me.enqueue(n);
            }
        }));
    }

    /// Queues `notice` without waiting: a full queue drops it, counted as
    /// `dropped` for each destination it was for.
    pub fn enqueue(&self, notice: Notice) {
        let settings = self.settings();
        let destinations = settings.destinations_for(notice.kind);
        if destinations.is_empty() {
            return;
        }
        let kind = notice.kind;
        match self.tx.try_send(notice) {
            Ok(()) => self.metrics.queue_depth.inc(),
            Err(e) => {
                let why = match e {
                    mpsc::error::TrySendError::Full(_) => "the queue is full",
                    mpsc::error::TrySendError::Closed(_) => "the notifier has stopped",
                };
                tracing::warn!(kind = kind.name(), "notification dropped: {why}");
                for d in &destinations {
                    self.metrics.outcome(d.name(), kind.name(), "dropped");
                }
            }
        }
    }

    /// Delivers queued notices, and watches the ledger's chain, until the
    /// process ends. `alive` is called whenever it makes progress.
    pub async fn run(self: Arc<Self>, alive: impl Fn() + Send + Sync) {
        let mut rx = self.rx.lock().await;
        let mut chain = tokio::time::interval(CHAIN_CHECK);
        chain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let deliveries = async {
            while let Some(notice) = rx.recv().await {
                self.metrics.queue_depth.dec();
                self.deliver(notice).await;
            }
        };
        let watch = async {
            loop {
                chain.tick().await;
                alive();
                self.check_chain();
            }
        };
        tokio::join!(deliveries, watch);
    }

    /// A break of the ledger's chain found by any verification.
    fn check_chain(&self) {
        let Some(engine) = self.engine.get().and_then(Weak::upgrade) else {
            return;
        };
        let broken = engine.ledger().broken().map(|b| (b.seq, b.reason));
        let settings = self.settings();
        let notice = self.triggers.lock().chain(broken, &settings);
        if let Some(n) = notice {
            self.enqueue(n);
        }
    }

    /// Delivers `notice` to every destination that takes its kind,
    /// concurrently, each with its retries.
    async fn deliver(&self, mut notice: Notice) {
        if notice.kind == Kind::Approval {
            self.add_savings(&mut notice).await;
        }
        let settings = self.settings();
        let destinations = settings.destinations_for(notice.kind);
        let sends = destinations.iter().map(|d| self.deliver_to(d, &notice, &settings));
        futures::future::join_all(sends).await;
    }

    async fn deliver_to(&self, to: &Destination, notice: &Notice, settings: &NotifySettings) {
        let attempts = settings.max_attempts.max(1);
        for n in 1..=attempts {
            let a = deliver::attempt(&self.client, to, notice, settings).await;
            if a.delivered {
                self.metrics.outcome(to.name(), notice.kind.name(), "delivered");
                tracing::debug!(
                    destination = to.name(),
                    kind = notice.kind.name(),
                    attempt = n,
                    "notification delivered"
                );
                return;
            }
            self.metrics.failure(to.name(), notice.kind.name(), a.reason());
            let error = a.error.clone().unwrap_or_default();
            if n == attempts || !a.retryable() {
                self.metrics.outcome(to.name(), notice.kind.name(), "failed");
                tracing::warn!(destination = to.name(), kind = notice.kind.name(), attempts = n, %error, "notification not delivered; given up");
                return;
            }
            let pause = deliver::pause(settings, n, &a);
            tracing::info!(destination = to.name(), kind = notice.kind.name(), attempt = n, %error, retry_in = ?pause, "notification attempt failed");
            tokio::time::sleep(pause).await;
        }
    }

    /// The savings of the items waiting for approval, read now.
    async fn add_savings(&self, notice: &mut Notice) {
        let Some(engine) = self.engine.get().and_then(Weak::upgrade) else {
            return;
        };
        let queue = tokio::task::spawn_blocking(move || engine.remediation_queue(0)).await;
        let Ok(Ok(parts)) = queue else { return };
        if let Some(p) = parts.iter().find(|p| p.name == "pending") {
            notice.summary.push_str(&format!(
                "\nTheir projected savings: {}/mo.",
                triggers::usd(p.savings_usd_mo)
            ));
            notice.payload["savings_usd_mo"] = json!((p.savings_usd_mo * 100.0).round() / 100.0);
        }
    }

    /// Sends a test message now, once (no retries), to the Slack webhook,
    /// or with `all` to every destination; `None` when there is none.
    pub async fn test(&self, all: bool, sender: &str) -> Option<Vec<TestOutcome>> {
        let settings = self.settings();
        let destinations: Vec<Destination> = if all {
            settings.all_destinations()
        } else {
            settings
                .slack_webhook
                .iter()
                .map(|url| Destination::Slack { url: url.clone() })
                .collect()
        };
        if destinations.is_empty() {
            return None;
        }
        let notice = Notice::new(
            Kind::Test,
            "TEST",
            "svc test notification".into(),
            format!("Notifications from svc reach this destination. Sent by {sender}."),
            json!({"sender": sender}),
        )
        .with_view("#/settings");
        let sends = destinations.iter().map(|d| {
            let (notice, settings) = (&notice, &settings);
            async move {
                let a = deliver::attempt(&self.client, d, notice, settings).await;
                if a.delivered {
                    self.metrics.outcome(d.name(), Kind::Test.name(), "delivered");
                } else {
                    self.metrics.failure(d.name(), Kind::Test.name(), a.reason());
                    self.metrics.outcome(d.name(), Kind::Test.name(), "failed");
                }
                TestOutcome {
                    destination: d.name().to_owned(),
                    delivered: a.delivered,
                    status: a.status,
                    body: a.body,
                    error: a.error,
                    duration_ms: a.duration.as_millis() as u64,
                }
            }
        });
        Some(futures::future::join_all(sends).await)
    }
}

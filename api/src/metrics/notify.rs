//! The notifier's metrics: every notice's outcome per destination, every
//! failed delivery attempt, and the queue's depth.

use prometheus::{IntCounterVec, IntGauge, Opts, Registry};

pub const NOTIFICATIONS: &str = "svc_notifications_total";
pub const NOTIFICATION_FAILURES: &str = "svc_notification_failures_total";
pub const NOTIFICATION_QUEUE_DEPTH: &str = "svc_notification_queue_depth";

#[derive(Clone)]
pub struct NotifyMetrics {
    /// Notices by destination, kind and outcome (`delivered`, `failed`
    /// after the last attempt, `dropped` because the queue was full).
    pub notifications: IntCounterVec,
    /// Failed delivery attempts by destination, kind and reason
    /// (`timeout`, `connection`, `server_error`, `rate_limited`, `client_error`).
    pub failures: IntCounterVec,
    /// Notices waiting for delivery.
    pub queue_depth: IntGauge,
}

impl NotifyMetrics {
    /// Declares the metrics in `registry`.
    ///
    /// # Panics
    /// Only if a declaration below is malformed (a programming error).
    pub fn new(registry: &Registry) -> NotifyMetrics {
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter declaration")
        };
        // Each name is declared once above; a failure would show as a
        // missing metric, never as a stopped daemon.
        fn register<C: prometheus::core::Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
            if let Err(e) = registry.register(Box::new(c.clone())) {
                tracing::error!(error = %e, "metric not registered");
            }
            c
        }
        NotifyMetrics {
            notifications: register(
                registry,
                counter_vec(
                    NOTIFICATIONS,
                    "Notifications by destination, kind and outcome (delivered, failed after the last attempt, dropped on a full queue).",
                    &["destination", "kind", "outcome"],
                ),
            ),
            failures: register(
                registry,
                counter_vec(
                    NOTIFICATION_FAILURES,
                    "Failed notification delivery attempts by destination, kind and reason.",
                    &["destination", "kind", "reason"],
                ),
            ),
            queue_depth: register(
                registry,
                IntGauge::new(NOTIFICATION_QUEUE_DEPTH, "Notifications waiting for delivery.")
                    .expect("valid gauge declaration"),
            ),
        }
    }

    pub fn outcome(&self, destination: &str, kind: &str, outcome: &str) {
        self.notifications
            .with_label_values(&[destination, kind, outcome])
            .inc();
    }

    pub fn failure(&self, destination: &str, kind: &str, reason: &str) {
        self.failures.with_label_values(&[destination, kind, reason]).inc();
    }
}

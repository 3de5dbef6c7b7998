//! `/metrics`: Prometheus text format (0.0.4) from the daemon's own registry.
//!
//! Every metric name of the daemon's own is declared once, below. Scan
//! metrics are fed by the engine's scan listener ([`Metrics::observe_scan`]);
//! HTTP metrics by the [`http::track_http`] middleware; uptime and the ledger's
//! event count are read when `/metrics` is scraped, and so are the standard
//! `process_*` metrics on Linux (resident memory, CPU seconds, file
//! descriptors, threads).
//!
//! `svc_waste_usd_total` is named by SPEC and holds a value that goes up and
//! down. Typed as a gauge, a name ending in `_total` fails `promtool check
//! metrics` ("non-counter metrics should not have _total suffix"), so it is
//! exposed untyped: queries treat it exactly like a gauge.

pub mod http;
pub mod notify;

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::Method;
use prometheus::proto::{Counter, Gauge, Metric, MetricFamily, MetricType};
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
    exponential_buckets,
};
use svc_engine::scan::ScanReport;

/// Metric names, declared once.
pub mod names {
    pub const SCAN_DURATION: &str = "svc_scan_duration_seconds";
    pub const NODES_DISCOVERED: &str = "svc_nodes_discovered_total";
    pub const WASTE_USD: &str = "svc_waste_usd_total";
    pub const GRAPH_NODES: &str = "svc_graph_nodes";
    pub const GRAPH_EDGES: &str = "svc_graph_edges";
    pub const SCANS: &str = "svc_scans_total";
    pub const SOURCE_FAILURES: &str = "svc_source_failures_total";
    pub const POLICY_VIOLATIONS: &str = "svc_policy_violations_total";
    pub const HTTP_REQUESTS: &str = "svc_http_requests_total";
    pub const HTTP_DURATION: &str = "svc_http_request_duration_seconds";
    pub const UPTIME: &str = "svc_process_uptime_seconds";
    pub const READY: &str = "svc_ready";
    pub const LEDGER_EVENTS: &str = "svc_ledger_events_total";
    pub const LEDGER_EXPORTS: &str = "svc_ledger_exports_total";
    pub const LEDGER_EXPORTED_EVENTS: &str = "svc_ledger_exported_events_total";
    pub const LEDGER_EXPORTED_SEQ: &str = "svc_ledger_exported_seq";
}

/// `route` label of a request that matched no route.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// Content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";

pub struct Metrics {
    registry: Registry,
    scan_duration: Histogram,
    nodes_discovered: IntCounterVec,
    scans: IntCounterVec,
    source_failures: IntCounterVec,
    graph_nodes: IntGauge,
    graph_edges: IntGauge,
    /// Labelled rule_id, resource_type, enforcement_mode; fed by policy evaluation.
    pub policy_violations: IntCounterVec,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    /// Current projected waste in USD per month, as `f64` bits.
    waste_usd: AtomicU64,
    /// Compliance export runs by outcome (success or failure).
    pub ledger_exports: IntCounterVec,
    /// Events written to the export bucket.
    pub ledger_exported_events: prometheus::IntCounter,
    /// The last seq held by the export bucket.
    pub ledger_exported_seq: IntGauge,
    /// Notification outcomes, failed attempts and queue depth.
    pub notify: notify::NotifyMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn register<C: prometheus::core::Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    // Names are constants declared above and each is registered once, so
    // registration cannot fail; a failure would show as a missing metric.
    if let Err(e) = registry.register(Box::new(c.clone())) {
        tracing::error!(error = %e, "metric not registered");
    }
    c
}

impl Metrics {
    /// Declares every metric in a fresh registry.
    ///
    /// # Panics
    /// Only if a declaration below is malformed (a programming error).
    pub fn new() -> Metrics {
        use names::*;
        let registry = Registry::new();
        // The daemon's process, read from /proc at each scrape: resident
        // and virtual memory, CPU seconds, open and allowed file
        // descriptors, threads, start time (`process_*`).
        #[cfg(target_os = "linux")]
        if let Err(e) = registry.register(Box::new(prometheus::process_collector::ProcessCollector::for_self())) {
            tracing::error!(error = %e, "process metrics not registered");
        }
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter declaration")
        };
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("valid gauge declaration");
        let scan_duration = Histogram::with_opts(
            HistogramOpts::new(SCAN_DURATION, "Duration of the full scan pipeline in seconds.")
                .buckets(exponential_buckets(0.05, 2.0, 15).expect("valid buckets")),
        )
        .expect("valid histogram declaration");
        let http_duration = HistogramVec::new(
            HistogramOpts::new(
                HTTP_DURATION,
                "HTTP request duration in seconds, by method and route template.",
            ),
            &["method", "route"],
        )
        .expect("valid histogram declaration");
        Metrics {
            scan_duration: register(&registry, scan_duration),
            nodes_discovered: register(
                &registry,
                counter_vec(
                    NODES_DISCOVERED,
                    "Nodes reported by sources, per provider, summed over scans.",
                    &["provider"],
                ),
            ),
            scans: register(
                &registry,
                counter_vec(SCANS, "Finished scans by outcome (success or failure).", &["outcome"]),
            ),
            source_failures: register(
                &registry,
                counter_vec(
                    SOURCE_FAILURES,
                    "Source (plugin) scans that failed, per source.",
                    &["source"],
                ),
            ),
            graph_nodes: register(
                &registry,
                gauge(GRAPH_NODES, "Active (visible) nodes after the last scan."),
            ),
            graph_edges: register(&registry, gauge(GRAPH_EDGES, "Visible edges after the last scan.")),
            policy_violations: register(
                &registry,
                counter_vec(
                    POLICY_VIOLATIONS,
                    "Policy rule violations, by rule, resource type and enforcement mode.",
                    &["rule_id", "resource_type", "enforcement_mode"],
                ),
            ),
            http_requests: register(
                &registry,
                counter_vec(
                    HTTP_REQUESTS,
                    "HTTP requests by method, route template and status code.",
                    &["method", "route", "status"],
                ),
            ),
            http_duration: register(&registry, http_duration),
            ledger_exports: register(
                &registry,
                counter_vec(
                    LEDGER_EXPORTS,
                    "Compliance export runs by outcome (success or failure).",
                    &["outcome"],
                ),
            ),
            ledger_exported_events: register(
                &registry,
                prometheus::IntCounter::new(LEDGER_EXPORTED_EVENTS, "Ledger events written to the export bucket.")
                    .expect("valid counter declaration"),
            ),
            ledger_exported_seq: register(
                &registry,
                gauge(LEDGER_EXPORTED_SEQ, "The last ledger seq held by the export bucket."),
            ),
            notify: notify::NotifyMetrics::new(&registry),
            registry,
            waste_usd: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Records a finished scan.
    pub fn observe_scan(&self, report: &ScanReport) {
        self.scan_duration.observe(report.duration_ms as f64 / 1000.0);
        for (provider, n) in &report.discovered {
            self.nodes_discovered.with_label_values(&[provider.as_str()]).inc_by(*n);
        }
        for s in report.sources.iter().filter(|s| !s.ok) {
            self.source_failures.with_label_values(&[s.name.as_str()]).inc();
        }
        self.scans.with_label_values(&["success"]).inc();
        for (rule, ty, mode, n) in &report.policy.violations {
            self.policy_violations
                .with_label_values(&[rule.as_str(), ty.as_str(), mode])
                .inc_by(*n);
        }
        self.graph_nodes.set(i64::try_from(report.nodes).unwrap_or(i64::MAX));
        self.graph_edges.set(i64::try_from(report.edges).unwrap_or(i64::MAX));
        let waste = if report.waste_usd_mo.is_finite() {
            report.waste_usd_mo
        } else {
            0.0
        };
        self.waste_usd.store(waste.to_bits(), Ordering::Relaxed);
    }

    /// Records a scan that failed (whoever started it).
    pub fn observe_scan_failure(&self) {
        self.scans.with_label_values(&["failure"]).inc();
    }

    /// Records one answered HTTP request.
    pub fn observe_http(&self, method: &Method, route: &str, status: u16, seconds: f64) {
        let method = method_label(method);
        let status = status.to_string();
        self.http_requests
            .with_label_values(&[method, route, status.as_str()])
            .inc();
        self.http_duration.with_label_values(&[method, route]).observe(seconds);
    }

    /// The exposition text. `uptime_s` and `ledger_events` are read by the caller.
    /// The exposition text; `ready` is what `/readyz` answers (1 for 200).
    pub fn encode(&self, uptime_s: f64, ledger_events: Option<u64>, ready: bool) -> Result<String, prometheus::Error> {
        let mut families = self.registry.gather();
        families.push(family(
            names::READY,
            "1 while the daemon is ready (/readyz answers 200), else 0.",
            MetricType::GAUGE,
            f64::from(u8::from(ready)),
        ));
        families.push(family(
            names::UPTIME,
            "Seconds since the daemon started.",
            MetricType::GAUGE,
            uptime_s,
        ));
        if let Some(n) = ledger_events {
            families.push(family(
                names::LEDGER_EVENTS,
                "Events appended to the audit ledger (its last sequence number).",
                MetricType::COUNTER,
                n as f64,
            ));
        }
        families.sort_by(|a, b| a.name().cmp(b.name()));
        let mut out = Vec::new();
        TextEncoder::new().encode(&families, &mut out)?;
        let mut text = String::from_utf8_lossy(&out).into_owned();
        // Untyped: see the module documentation.
        let waste = f64::from_bits(self.waste_usd.load(Ordering::Relaxed));
        text.push_str(&format!(
            "# HELP {name} Current projected waste in USD per month.\n# TYPE {name} untyped\n{name} {waste}\n",
            name = names::WASTE_USD
        ));
        Ok(text)
    }
}

/// A family of one unlabelled counter or gauge sample whose value is read
/// at scrape time.
fn family(name: &str, help: &str, kind: MetricType, value: f64) -> MetricFamily {
    let mut m = Metric::default();
    match kind {
        MetricType::COUNTER => {
            let mut c = Counter::default();
            c.set_value(value);
            m.set_counter(c);
        }
        _ => {
            let mut g = Gauge::default();
            g.set_value(value);
            m.set_gauge(g);
        }
    }
    let mut f = MetricFamily::default();
    f.set_name(name.to_owned());
    f.set_help(help.to_owned());
    f.set_field_type(kind);
    f.mut_metric().push(m);
    f
}

/// Known methods keep their name; anything else is `other`, so clients
/// cannot grow the label set.
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_has_help_and_type_for_every_family() {
        let m = Metrics::new();
        m.observe_http(&Method::GET, "/metrics", 200, 0.01);
        m.observe_http(
            &Method::from_bytes(b"BREW").unwrap_or(Method::GET),
            "/metrics",
            405,
            0.01,
        );
        let text = m.encode(1.5, Some(3), false).unwrap_or_default();
        for name in [
            names::WASTE_USD,
            names::UPTIME,
            names::LEDGER_EVENTS,
            names::HTTP_REQUESTS,
            names::GRAPH_NODES,
            names::READY,
        ] {
            assert!(text.contains(&format!("# HELP {name} ")), "{name} in\n{text}");
            assert!(text.contains(&format!("# TYPE {name} ")), "{name} in\n{text}");
        }
        assert!(text.contains("# TYPE svc_waste_usd_total untyped"));
        assert!(text.contains("svc_ledger_events_total 3"));
        assert!(text.contains("\nsvc_ready 0\n"), "{text}");
        assert!(text.contains(r#"method="other""#));
    }

    /// The process's own figures, as this test process has them now.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_process_reports_its_resident_memory_and_cpu() {
        let text = Metrics::new().encode(0.0, None, true).unwrap_or_default();
        let value = |name: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} sample in\n{text}"))
        };
        // A running test binary holds at least a megabyte and has threads.
        assert!(value("process_resident_memory_bytes") > 1e6);
        assert!(value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"));
        // Whole seconds of CPU: there, even if still 0.
        value("process_cpu_seconds_total");
        assert!(value("process_open_fds") >= 3.0);
        assert!(value("process_threads") >= 1.0);
        assert!(value("process_start_time_seconds") > 1.6e9);
        assert!(text.contains("# TYPE process_cpu_seconds_total counter"));
    }
}

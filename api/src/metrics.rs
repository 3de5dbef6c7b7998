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
    /// What an operator alerts on ([`operator`]).
    operator: operator::Operator,
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
            operator: operator::Operator::new(&registry),
            registry,
            waste_usd: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Records a finished scan.
    pub fn observe_scan(&self, report: &ScanReport) {
        self.operator.observe_scan(report);
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
        self.encode_with(uptime_s, ledger_events, ready, &operator::Scrape::default())
    }

    /// [`Metrics::encode`] plus the figures `scrape` read at scrape time.
    pub fn encode_with(
        &self,
        uptime_s: f64,
        ledger_events: Option<u64>,
        ready: bool,
        scrape: &operator::Scrape,
    ) -> Result<String, prometheus::Error> {
        let mut families = self.registry.gather();
        families.extend(self.operator.families(scrape));
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

// What an operator alerts on: the build, stale sources, plugins down,
// the remediation queue and the compliance export's lag. One block, from
// here to the end of `mod operator`.
pub mod operator {
    use std::collections::BTreeMap;

    use parking_lot::Mutex;
    use prometheus::proto::{Gauge, LabelPair, Metric, MetricFamily, MetricType};
    use prometheus::{GaugeVec, IntCounterVec, Opts, Registry};
    use svc_engine::Engine;
    use svc_engine::scan::ScanReport;

    use crate::plugins::PluginCatalog;

    pub const BUILD_INFO: &str = "svc_build_info";
    pub const SOURCE_LAST_SUCCESS: &str = "svc_source_last_success_timestamp_seconds";
    pub const PLUGIN_UP: &str = "svc_plugin_up";
    pub const REMEDIATION_QUEUE_DEPTH: &str = "svc_remediation_queue_depth";
    pub const REMEDIATION_SAVINGS: &str = "svc_remediation_savings_usd";
    pub const PLUGIN_REJECTED_ITEMS: &str = "svc_plugin_rejected_items_total";
    pub const EXPORT_LAG_EVENTS: &str = "svc_ledger_export_lag_events";
    pub const EXPORT_LAG_SECONDS: &str = "svc_ledger_export_lag_seconds";

    /// `reason` of items the decoder dropped (bad CRN, bad cost, invalid or
    /// oversized properties, an edge without ends).
    pub const REJECTED_INVALID: &str = "invalid";
    /// `reason` of items staged by a source that passed a scan limit
    /// (`daemon.scan_max_nodes`/`_edges`): its whole scan is dropped.
    pub const REJECTED_LIMIT: &str = "limit";

    /// The commit the build came from, when the build was told
    /// (`SVC_BUILD_COMMIT` at compile time).
    const COMMIT: Option<&str> = option_env!("SVC_BUILD_COMMIT");

    /// The metrics fed by scans.
    pub(super) struct Operator {
        last_success: GaugeVec,
        rejected: IntCounterVec,
        /// Whether each source and heuristic plugin's last use worked, by name.
        last_ok: Mutex<BTreeMap<String, bool>>,
    }

    impl Operator {
        /// # Panics
        /// Only if a declaration below is malformed (a programming error).
        pub(super) fn new(registry: &Registry) -> Operator {
            Operator {
                last_success: crate::metrics::register(
                    registry,
                    GaugeVec::new(
                        Opts::new(
                            SOURCE_LAST_SUCCESS,
                            "Unix time at which the last scan that succeeded for this source (plugin or mock estate) finished.",
                        ),
                        &["source"],
                    )
                    .expect("valid gauge declaration"),
                ),
                rejected: crate::metrics::register(
                    registry,
                    IntCounterVec::new(
                        Opts::new(
                            PLUGIN_REJECTED_ITEMS,
                            "Nodes and edges a source sent that were not taken, by reason: invalid (dropped by the decoder) or limit (a scan limit was passed and the scan dropped).",
                        ),
                        &["plugin", "reason"],
                    )
                    .expect("valid counter declaration"),
                ),
                last_ok: Mutex::new(BTreeMap::new()),
            }
        }

        pub(super) fn observe_scan(&self, report: &ScanReport) {
            let finished = (report.started_us as f64) / 1e6 + (report.duration_ms as f64) / 1e3;
            let mut last_ok = self.last_ok.lock();
            for s in &report.sources {
                last_ok.insert(s.name.clone(), s.ok);
                if s.ok {
                    self.last_success.with_label_values(&[s.name.as_str()]).set(finished);
                }
                if s.rejected > 0 {
                    self.rejected
                        .with_label_values(&[s.name.as_str(), REJECTED_INVALID])
                        .inc_by(s.rejected);
                }
                let limited = s.error.as_deref().is_some_and(|e| e.contains("(daemon.scan_max_"));
                if limited && s.nodes + s.edges > 0 {
                    self.rejected
                        .with_label_values(&[s.name.as_str(), REJECTED_LIMIT])
                        .inc_by(s.nodes + s.edges);
                }
            }
            for h in &report.heuristics {
                last_ok.insert(h.name.clone(), h.ok);
            }
        }

        /// The families computed at scrape time.
        pub(super) fn families(&self, scrape: &Scrape) -> Vec<MetricFamily> {
            let mut out = Vec::new();
            let mut build = vec![("version", env!("CARGO_PKG_VERSION").to_owned())];
            if let Some(commit) = COMMIT {
                build.push(("commit", commit.to_owned()));
            }
            out.push(gauges(
                BUILD_INFO,
                "Always 1; the labels name the build (version, and commit when the build was given SVC_BUILD_COMMIT).",
                vec![(build, 1.0)],
            ));
            let last_ok = self.last_ok.lock();
            let up = scrape
                .plugins
                .iter()
                .map(|p| {
                    let failed = last_ok.get(&p.name) == Some(&false);
                    let up = p.active && p.verified && !failed;
                    (
                        vec![("plugin", p.name.clone()), ("role", p.role.clone())],
                        f64::from(u8::from(up)),
                    )
                })
                .collect();
            out.push(gauges(
                PLUGIN_UP,
                "1 while an installed plugin is active, passes its integrity check and its last scan (or heuristic pass) did not fail; else 0.",
                up,
            ));
            if let Some(queue) = &scrape.queue {
                let depth = queue
                    .iter()
                    .map(|(stage, n, _)| (vec![("stage", (*stage).to_owned())], *n as f64))
                    .collect();
                out.push(gauges(
                    REMEDIATION_QUEUE_DEPTH,
                    "Resources at each remediation pipeline stage (SPEC 3.1), rejected items excluded.",
                    depth,
                ));
                let savings = queue
                    .iter()
                    .map(|(stage, _, usd)| (vec![("stage", (*stage).to_owned())], *usd))
                    .collect();
                out.push(gauges(
                    REMEDIATION_SAVINGS,
                    "Monthly savings in USD of the resources at each remediation pipeline stage.",
                    savings,
                ));
            }
            if let Some(lag) = &scrape.export_lag {
                out.push(gauges(
                    EXPORT_LAG_EVENTS,
                    "Ledger events appended but not yet in the compliance export's bucket (absent while export is off).",
                    vec![(Vec::new(), lag.events as f64)],
                ));
                out.push(gauges(
                    EXPORT_LAG_SECONDS,
                    "Age in seconds of the oldest ledger event not yet exported; 0 when none waits (absent while export is off).",
                    vec![(Vec::new(), lag.seconds)],
                ));
            }
            // A family without samples is not valid exposition text.
            out.retain(|f| !f.get_metric().is_empty());
            out
        }
    }

    /// One plugin as `svc_plugin_up` sees it.
    #[derive(Clone, Debug, Default)]
    pub struct PluginState {
        pub name: String,
        pub role: String,
        pub active: bool,
        pub verified: bool,
    }

    /// The compliance export's backlog.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct ExportLag {
        pub events: u64,
        pub seconds: f64,
    }

    /// What `/metrics` reads from the daemon when it is scraped.
    #[derive(Clone, Debug, Default)]
    pub struct Scrape {
        pub plugins: Vec<PluginState>,
        /// Per stage, in flow order: items and their monthly savings.
        pub queue: Option<Vec<(&'static str, u64, f64)>>,
        /// `None` while export is off.
        pub export_lag: Option<ExportLag>,
    }

    impl Scrape {
        /// Reads the plugin catalog, the remediation queue and the export
        /// mark. Blocking (store reads): run it off the async runtime.
        pub fn read(
            engine: Option<&Engine>,
            plugins: Option<&dyn PluginCatalog>,
            export_on: bool,
            now_us: u64,
        ) -> Scrape {
            let plugins = plugins
                .map(|c| {
                    c.list()
                        .into_iter()
                        .map(|p| PluginState {
                            verified: p.status == "verified",
                            name: p.name,
                            role: p.role,
                            active: p.active,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let Some(engine) = engine else {
                return Scrape {
                    plugins,
                    ..Scrape::default()
                };
            };
            // A scrape does not wait for the items a start is still reading.
            let queue = match engine.remediation_loaded().then(|| engine.remediation_queue(0)) {
                None => None,
                Some(Ok(parts)) => Some(
                    parts
                        .into_iter()
                        .filter(|p| svc_engine::remediation::stage_named(p.name).is_some())
                        .map(|p| (p.name, p.count, p.savings_usd_mo))
                        .collect(),
                ),
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "remediation queue not read for /metrics");
                    None
                }
            };
            let export_lag = if export_on { export_lag(engine, now_us) } else { None };
            Scrape {
                plugins,
                queue,
                export_lag,
            }
        }
    }

    /// Events after the export mark and the age of the oldest of them.
    fn export_lag(engine: &Engine, now_us: u64) -> Option<ExportLag> {
        let ledger = engine.ledger();
        let mark = match ledger.exported_through() {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(error = %e, "export mark not read for /metrics");
                return None;
            }
        };
        let events = ledger.last_seq().saturating_sub(mark);
        let seconds = if events == 0 {
            0.0
        } else {
            match ledger.events_after(mark, 1) {
                Ok(first) => first
                    .first()
                    .map_or(0.0, |e| now_us.saturating_sub(e.ts_us) as f64 / 1e6),
                Err(e) => {
                    tracing::debug!(error = %e, "oldest unexported event not read for /metrics");
                    return None;
                }
            }
        };
        Some(ExportLag { events, seconds })
    }

    /// A gauge family of labelled samples.
    fn gauges(name: &str, help: &str, samples: Vec<(Vec<(&str, String)>, f64)>) -> MetricFamily {
        let mut f = MetricFamily::default();
        f.set_name(name.to_owned());
        f.set_help(help.to_owned());
        f.set_field_type(MetricType::GAUGE);
        for (labels, value) in samples {
            let mut m = Metric::default();
            let pairs: Vec<LabelPair> = labels
                .into_iter()
                .map(|(k, v)| {
                    let mut l = LabelPair::default();
                    l.set_name(k.to_owned());
                    l.set_value(v);
                    l
                })
                .collect();
            m.set_label(pairs);
            let mut g = Gauge::default();
            g.set_value(value);
            m.set_gauge(g);
            f.mut_metric().push(m);
        }
        f
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

    fn source(
        name: &str,
        ok: bool,
        error: Option<&str>,
        staged: u64,
        rejected: u64,
    ) -> svc_engine::scan::SourceOutcome {
        svc_engine::scan::SourceOutcome {
            name: name.to_owned(),
            providers: vec!["mock".to_owned()],
            ok,
            error: error.map(str::to_owned),
            nodes: staged,
            edges: 0,
            rejected,
            rejections: Vec::new(),
            duration_ms: 5,
            observed_at: None,
            unlisted: Vec::new(),
        }
    }

    /// Sources, plugins, the queue and the export lag as an operator reads them.
    #[test]
    fn operator_metrics_follow_scans_and_the_scrape() {
        let m = Metrics::new();
        let report = ScanReport {
            started_us: 1_700_000_000_000_000,
            duration_ms: 1500,
            sources: vec![
                source("mock", true, None, 10, 3),
                source(
                    "big",
                    false,
                    Some("sent more than 5 nodes in one scan (daemon.scan_max_nodes); the scan was stopped there"),
                    5,
                    0,
                ),
            ],
            ..ScanReport::default()
        };
        m.observe_scan(&report);
        m.observe_scan(&report);
        let plugin = |name: &str, active: bool, verified: bool| operator::PluginState {
            name: name.to_owned(),
            role: "provider".to_owned(),
            active,
            verified,
        };
        let scrape = operator::Scrape {
            plugins: vec![
                plugin("mock", true, true),
                plugin("big", true, true),
                plugin("off", false, true),
                plugin("tampered", true, false),
            ],
            queue: Some(vec![("flagged", 4, 12.5), ("applied", 0, 0.0)]),
            export_lag: Some(operator::ExportLag {
                events: 7,
                seconds: 30.5,
            }),
        };
        let text = m.encode_with(0.0, None, true, &scrape).unwrap_or_default();
        for line in [
            "svc_source_last_success_timestamp_seconds{source=\"mock\"} 1700000001.5",
            "svc_plugin_up{plugin=\"mock\",role=\"provider\"} 1",
            "svc_plugin_up{plugin=\"big\",role=\"provider\"} 0",
            "svc_plugin_up{plugin=\"off\",role=\"provider\"} 0",
            "svc_plugin_up{plugin=\"tampered\",role=\"provider\"} 0",
            "svc_plugin_rejected_items_total{plugin=\"mock\",reason=\"invalid\"} 6",
            "svc_plugin_rejected_items_total{plugin=\"big\",reason=\"limit\"} 10",
            "svc_remediation_queue_depth{stage=\"flagged\"} 4",
            "svc_remediation_savings_usd{stage=\"flagged\"} 12.5",
            "svc_ledger_export_lag_events 7",
            "svc_ledger_export_lag_seconds 30.5",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(!text.contains("svc_source_last_success_timestamp_seconds{source=\"big\"}"));
        assert!(text.contains(&format!("svc_build_info{{version=\"{}\"", env!("CARGO_PKG_VERSION"))));
        for name in [
            operator::BUILD_INFO,
            operator::PLUGIN_UP,
            operator::REMEDIATION_QUEUE_DEPTH,
            operator::EXPORT_LAG_SECONDS,
        ] {
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
            assert!(text.contains(&format!("# TYPE {name} gauge")), "{name}");
        }
        assert!(text.contains("# TYPE svc_plugin_rejected_items_total counter"));

        // Export off and no engine yet: the lag and queue are absent, not 0.
        let text = m
            .encode_with(0.0, None, true, &operator::Scrape::default())
            .unwrap_or_default();
        assert!(!text.contains("svc_ledger_export_lag"), "{text}");
        assert!(!text.contains("svc_remediation_queue_depth"), "{text}");
        assert!(!text.contains("svc_plugin_up"), "{text}");
    }

    /// A scrape while a start still reads the remediation items answers
    /// at once, without the queue; once they are in, with it.
    #[test]
    fn a_scrape_does_not_wait_for_the_remediation_items() {
        let dir = tempfile::tempdir().unwrap();
        let clock = std::sync::Arc::new(svc_engine::clock::ManualClock::new(1_700_000_000_000_000));
        let replication = svc_engine::engine::Replication::default();
        let (engine, items) = svc_engine::Engine::open_deferred(dir.path(), "t", clock, replication).unwrap();
        let engine = std::sync::Arc::new(engine);
        let scrape = |engine: std::sync::Arc<svc_engine::Engine>| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(operator::Scrape::read(Some(&engine), None, false, 0).queue));
            rx.recv_timeout(std::time::Duration::from_secs(30))
                .expect("the scrape answered")
        };
        assert_eq!(scrape(engine.clone()), None, "no queue while the items are read");
        items.load(&engine).unwrap();
        assert!(
            scrape(engine.clone()).is_some_and(|q| !q.is_empty()),
            "the queue once they are in"
        );
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

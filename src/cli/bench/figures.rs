//! What each figure of a bench document is: its name (stable, the unit
//! last), what it measures, whether lower or higher is better, and the
//! budget of DESIGN.md section 9 it answers to, if any.

/// Which way a figure improves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// A count or a size of the run, not a speed.
    Neither,
}

impl Better {
    pub fn word(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
            Better::Neither => "-",
        }
    }
}

/// One read endpoint of the HTTP load.
#[derive(Copy, Clone, Debug)]
pub struct Endpoint {
    /// The figures' middle part: `http_<key>_p99_ms`.
    pub key: &'static str,
    /// As printed.
    pub route: &'static str,
    pub path: &'static str,
    pub query: &'static [(&'static str, &'static str)],
    /// Follows `next_cursor` from one request to the next.
    pub paged: bool,
}

pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint {
        key: "graph_stats",
        route: "GET /api/v1/graph/stats",
        path: "/api/v1/graph/stats",
        query: &[],
        paged: false,
    },
    Endpoint {
        key: "graph_nodes",
        route: "GET /api/v1/graph/nodes (pages of 100)",
        path: "/api/v1/graph/nodes",
        query: &[("limit", "100")],
        paged: true,
    },
    Endpoint {
        key: "nodes",
        route: "GET /api/v1/nodes (pages of 100)",
        path: "/api/v1/nodes",
        query: &[("limit", "100")],
        paged: true,
    },
    Endpoint {
        key: "node",
        route: "GET /api/v1/graph/nodes/{crn}",
        path: "/api/v1/graph/nodes",
        query: &[],
        paged: false,
    },
    Endpoint {
        key: "waste",
        route: "GET /api/v1/waste-ledger (top 20)",
        path: "/api/v1/waste-ledger",
        query: &[("top", "20")],
        paged: false,
    },
    Endpoint {
        key: "history",
        route: "GET /api/v1/history (pages of 100)",
        path: "/api/v1/history",
        query: &[("limit", "100")],
        paged: true,
    },
];

/// The scan phases whose wall times a run records, by their span names
/// without `engine.` (SPEC order): `first_scan_phase_<phase>_ms` for the
/// first scan, `later_scan_phase_<phase>_ms` (the median) for the later
/// ones. Each scan's commit follows its phases (`*_commit_ms`).
pub fn phases() -> impl Iterator<Item = &'static str> {
    svc_engine::scan::spans::PHASES
        .into_iter()
        .map(|span| span.strip_prefix("engine.").unwrap_or(span))
}

/// The figure of one phase of the first scan (`first`) or of the later
/// scans' median.
pub fn phase_figure(first: bool, phase: &str) -> String {
    let scan = if first { "first_scan" } else { "later_scan" };
    format!("{scan}_phase_{phase}_ms")
}

/// A figure with a fixed name.
pub struct Figure {
    pub name: &'static str,
    pub what: &'static str,
    pub better: Better,
    /// The budget, as DESIGN.md states it.
    pub budget: Option<&'static str>,
}

const fn f(name: &'static str, what: &'static str, better: Better, budget: Option<&'static str>) -> Figure {
    Figure {
        name,
        what,
        better,
        budget,
    }
}

use Better::{Higher, Lower, Neither};

/// Every figure with a fixed name, in the order tables print them.
pub const FIGURES: &[Figure] = &[
    f("nodes", "resources in the graph after the first scan", Neither, None),
    f("edges", "edges in the graph after the first scan", Neither, None),
    f(
        "first_scan_ms",
        "first scan: plugins launched, estate streamed over plugin gRPC, every phase, commit",
        Lower,
        Some("<= 5 s at 1M; <= 60 s at 10M"),
    ),
    f("first_scan_commit_ms", "first scan: the durable commit", Lower, None),
    f(
        "first_scan_ingest_ms",
        "first scan: the mock plugins' sources, launch to last node staged",
        Lower,
        None,
    ),
    f(
        "first_scan_ingest_nodes_per_s",
        "ingest over real plugin gRPC (svc-plugin-mock processes), first scan",
        Higher,
        Some(">= 1,000,000 nodes/s"),
    ),
    f("later_scans", "later scans run", Neither, None),
    f(
        "later_scan_median_ms",
        "later scan (the mock's churn between scans), median",
        Lower,
        Some("<= 5 s at 1M; <= 20 s at 10M"),
    ),
    f("later_scan_min_ms", "later scan, fastest", Lower, None),
    f(
        "later_scan_commit_ms",
        "later scans: the durable commit, median",
        Lower,
        None,
    ),
    f(
        "later_scan_snapshot_ms",
        "later scans: the snapshot written behind each, from its answer to graph.snap in place, median",
        Lower,
        None,
    ),
    f("later_scan_max_ms", "later scan, slowest", Lower, None),
    f(
        "later_scan_ingest_nodes_per_s",
        "ingest over real plugin gRPC, later scans, median",
        Higher,
        Some(">= 1,000,000 nodes/s"),
    ),
    f(
        "vm_rss_bytes",
        "daemon resident memory (VmRSS) after the scans",
        Lower,
        Some("< 8 GiB at 10M"),
    ),
    f(
        "vm_hwm_bytes",
        "daemon peak resident memory (VmHWM) up to then",
        Lower,
        None,
    ),
    f("vm_rss_bytes_per_node", "daemon VmRSS per resource", Lower, None),
    f("vm_hwm_bytes_per_node", "daemon VmHWM per resource", Lower, None),
    f(
        "policy_install_ms",
        "100 CEL rules installed through the API",
        Lower,
        None,
    ),
    f(
        "policy_pass_ms",
        "100 CEL rules over the graph: the policy phase of a scan",
        Lower,
        Some("<= 1 s at 1M"),
    ),
    f("policy_pass_nodes", "nodes the policy phase evaluated", Neither, None),
    f("policy_pass_matches", "matches of the 100 rules", Neither, None),
    f("policy_scan_ms", "the scan that ran the 100 rules", Lower, None),
    f(
        "policy_dry_run_ms",
        "one CEL rule as a dry run over the graph",
        Lower,
        None,
    ),
    f("blast_radius_samples", "resources asked about", Neither, None),
    f("blast_radius_p50_us", "blast radius over HTTP, p50", Lower, None),
    f(
        "blast_radius_p99_us",
        "blast radius over HTTP, p99",
        Lower,
        Some("p99 <= 5 ms"),
    ),
    f(
        "topology_ms",
        "GET /api/v1/topology streamed to the last byte",
        Lower,
        Some("<= 1.5 s at 1M"),
    ),
    f(
        "topology_first_byte_ms",
        "GET /api/v1/topology: first byte",
        Lower,
        None,
    ),
    f("topology_bytes", "GET /api/v1/topology: body size", Neither, None),
    f(
        "http_requests_per_s",
        "HTTP load: requests/s over every read endpoint",
        Higher,
        None,
    ),
    f("ws_clients", "WebSocket clients on /events", Neither, None),
    f("ws_scan_events", "events a scan appended", Neither, None),
    f("ws_deliveries", "events delivered to the clients", Neither, None),
    f(
        "ws_delivery_p50_ms",
        "WebSocket delivery of a scan's events, p50 (from the first sign of the commit)",
        Lower,
        None,
    ),
    f(
        "ws_delivery_p99_ms",
        "WebSocket delivery of a scan's events, p99",
        Lower,
        None,
    ),
    f("ws_scan_ms", "the scan whose events were delivered", Lower, None),
    f(
        "stop_ms",
        "SIGTERM to exit (drain, plugins stopped, snapshot written)",
        Lower,
        None,
    ),
    f(
        "restart_to_ready_ms",
        "restart on the same data directory to /readyz 200",
        Lower,
        Some("<= 1 s at 1M; <= 3 s at 10M"),
    ),
];

/// What a figure measures and which way it improves, for any name a
/// document may hold (the HTTP load's per endpoint included).
pub fn describe(name: &str) -> (String, Better, Option<&'static str>) {
    if let Some(fig) = FIGURES.iter().find(|fig| fig.name == name) {
        return (fig.what.to_owned(), fig.better, fig.budget);
    }
    if let Some((first, phase)) = phase_of(name) {
        let what = if first {
            format!("first scan: the phase engine.{phase}")
        } else {
            format!("later scans: the phase engine.{phase}, median")
        };
        return (what, Lower, None);
    }
    if let Some(rest) = name.strip_prefix("http_") {
        for ep in ENDPOINTS {
            if let Some(tail) = rest.strip_prefix(ep.key).and_then(|t| t.strip_prefix('_')) {
                let (what, better) = match tail {
                    "requests_per_s" => ("requests/s", Higher),
                    "p50_ms" => ("p50", Lower),
                    "p99_ms" => ("p99", Lower),
                    _ => continue,
                };
                return (format!("HTTP load: {}, {what}", ep.route), better, None);
            }
        }
    }
    // A figure this build does not know (a newer document): by its unit.
    let better = if name.ends_with("_per_s") {
        Higher
    } else if ["_ms", "_us", "_bytes", "_per_node"].iter().any(|s| name.ends_with(s)) {
        Lower
    } else {
        Neither
    };
    (name.replace('_', " "), better, None)
}

/// Which scan (first or later) and phase a phase figure names.
fn phase_of(name: &str) -> Option<(bool, &'static str)> {
    let rest = name.strip_suffix("_ms")?;
    let (first, phase) = if let Some(p) = rest.strip_prefix("first_scan_phase_") {
        (true, p)
    } else {
        (false, rest.strip_prefix("later_scan_phase_")?)
    };
    phases().find(|p| *p == phase).map(|p| (first, p))
}

/// The place of a figure in printed tables: known figures first in
/// catalog order (each scan's phases after its commit), the HTTP load's
/// next, others last.
pub fn order(name: &str) -> (usize, String) {
    if let Some(i) = FIGURES.iter().position(|fig| fig.name == name) {
        return (i, String::new());
    }
    if let Some((first, phase)) = phase_of(name) {
        let after = if first {
            "first_scan_commit_ms"
        } else {
            "later_scan_commit_ms"
        };
        let i = FIGURES
            .iter()
            .position(|fig| fig.name == after)
            .unwrap_or(FIGURES.len());
        let step = phases().position(|p| p == phase).unwrap_or(0);
        return (i, format!("{step:02}"));
    }
    if let Some(i) = ENDPOINTS
        .iter()
        .position(|ep| name.starts_with(&format!("http_{}_", ep.key)))
    {
        return (FIGURES.len() + i, name.to_owned());
    }
    (FIGURES.len() + ENDPOINTS.len(), name.to_owned())
}

/// A figure's value for people: its unit read from its name.
pub fn human(name: &str, v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if name.ends_with("_per_s") {
        if v >= 1e6 {
            format!("{} M/s", trim(format!("{:.2}", v / 1e6)))
        } else if v >= 1e4 {
            format!("{}k/s", trim(format!("{:.1}", v / 1e3)))
        } else {
            format!("{}/s", trim(format!("{v:.1}")))
        }
    } else if name.ends_with("_per_node") {
        format!("{} B/node", trim(format!("{v:.1}")))
    } else if name.ends_with("_bytes") {
        if v >= 1024.0 * 1024.0 * 1024.0 {
            format!("{} GiB", trim(format!("{:.2}", v / 1073741824.0)))
        } else if v >= 1024.0 * 1024.0 {
            format!("{} MiB", trim(format!("{:.1}", v / 1048576.0)))
        } else {
            format!("{} KiB", trim(format!("{:.1}", v / 1024.0)))
        }
    } else if name.ends_with("_ms") {
        if v >= 1000.0 {
            format!("{} s", trim(format!("{:.2}", v / 1000.0)))
        } else {
            format!("{} ms", trim(format!("{v:.2}")))
        }
    } else if name.ends_with("_us") {
        if v >= 1000.0 {
            format!("{} ms", trim(format!("{:.2}", v / 1000.0)))
        } else {
            format!("{} µs", trim(format!("{v:.1}")))
        }
    } else {
        trim(format!("{v:.3}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_name_ends_in_its_unit_or_is_a_count() {
        for fig in FIGURES {
            let unit = ["_ms", "_us", "_bytes", "_per_s", "_per_node"]
                .iter()
                .any(|s| fig.name.ends_with(s));
            assert_eq!(
                unit,
                fig.better != Better::Neither || fig.name == "topology_bytes",
                "{}",
                fig.name
            );
        }
    }

    /// `schemas/bench.schema.json` names every figure this build writes.
    #[test]
    fn the_schema_names_every_figure() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../schemas/bench.schema.json")).unwrap();
        let figures = &schema["$defs"]["Figures"];
        for fig in FIGURES {
            assert!(
                figures["properties"].get(fig.name).is_some(),
                "{} is not in the schema",
                fig.name
            );
        }
        let required: Vec<&str> = figures["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        for ep in ENDPOINTS {
            for tail in ["requests_per_s", "p50_ms", "p99_ms"] {
                let name = format!("http_{}_{tail}", ep.key);
                assert!(
                    required.contains(&name.as_str()),
                    "{name} is not required by the schema"
                );
            }
        }
        // The phase figures match the schema's pattern for them, and
        // nothing else does.
        let patterns = figures["patternProperties"].as_object().unwrap();
        let phase_pattern = patterns.keys().find(|k| k.contains("_scan_phase_")).unwrap();
        let alternatives: Vec<&str> = phase_pattern
            .split_once("_scan_phase_(")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(names, _)| names.split('|').collect())
            .unwrap();
        assert_eq!(alternatives, phases().collect::<Vec<_>>(), "{phase_pattern}");
    }

    #[test]
    fn phase_figures_are_described_and_ordered_after_their_commit() {
        assert_eq!(phases().count(), 10);
        assert_eq!(phase_figure(true, "sau"), "first_scan_phase_sau_ms");
        let (what, better, budget) = describe("later_scan_phase_plugin_scan_ms");
        assert_eq!(
            (what.as_str(), better, budget),
            ("later scans: the phase engine.plugin_scan, median", Better::Lower, None)
        );
        // Not a phase: described by its unit only.
        assert_eq!(describe("first_scan_phase_nap_ms").0, "first scan phase nap ms");
        let mut names: Vec<String> = phases().map(|p| phase_figure(true, p)).collect();
        names.reverse();
        names.push("first_scan_commit_ms".into());
        names.push("first_scan_ingest_ms".into());
        names.sort_by_key(|n| order(n));
        assert_eq!(names[0], "first_scan_commit_ms");
        assert_eq!(names[1], "first_scan_phase_init_ms");
        assert_eq!(names[10], "first_scan_phase_signal_analysis_ms");
        assert_eq!(names[11], "first_scan_ingest_ms");
    }

    #[test]
    fn endpoint_figures_are_described() {
        let (what, better, _) = describe("http_graph_stats_p99_ms");
        assert_eq!(
            (what.as_str(), better),
            ("HTTP load: GET /api/v1/graph/stats, p99", Better::Lower)
        );
        assert_eq!(describe("http_history_requests_per_s").1, Better::Higher);
        assert_eq!(describe("something_new_ms").1, Better::Lower);
        assert_eq!(describe("widgets").1, Better::Neither);
    }

    #[test]
    fn values_read_with_their_units() {
        assert_eq!(human("first_scan_ms", 4260.0), "4.26 s");
        assert_eq!(human("first_scan_ms", 12.5), "12.5 ms");
        assert_eq!(human("blast_radius_p99_us", 13.7), "13.7 µs");
        assert_eq!(human("first_scan_ingest_nodes_per_s", 486_000.0), "486k/s");
        assert_eq!(human("vm_rss_bytes", 3.0 * 1073741824.0), "3 GiB");
        assert_eq!(human("vm_rss_bytes_per_node", 498.4), "498.4 B/node");
        assert_eq!(human("nodes", 1_000_000.0), "1000000");
    }
}

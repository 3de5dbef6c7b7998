//! `/metrics` of a running daemon: the SPEC metrics with values that agree
//! with the API, and an exposition that `promtool check metrics` accepts.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::Daemon;
use serde_json::Value;

/// The value of the sample `name{labels}`, labels given as `k="v"` pairs in
/// any order; `None` when there is no such sample.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, label_text) = match series.split_once('{') {
            Some((m, rest)) => (m, rest.strip_suffix('}')?),
            None => (series, ""),
        };
        if metric != name {
            return None;
        }
        let mut have: Vec<(&str, &str)> = Vec::new();
        for pair in label_text.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=')?;
            have.push((k, v.trim_matches('"')));
        }
        if have.len() != labels.len() || !labels.iter().all(|l| have.contains(l)) {
            return None;
        }
        value.parse().ok()
    })
}

/// Every `provider` label value of `name`.
fn providers_of(text: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name}{{provider=\"");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix)?.split_once('"').map(|(p, _)| p.to_owned()))
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test]
async fn metrics_agree_with_the_api_and_pass_promtool() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 600).await;
    let api = d.api();
    api.scan_wait().await;
    d.anonymous()
        .get("/api/v1/graph/stats")
        .await
        .expect_error(401, "unauthorized");
    let stats = api.get_ok("/api/v1/graph/stats").await;
    let scans = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    assert_eq!(scans.len(), 2, "the scan at start and one more");
    let head = api.get_ok("/api/v1/ledger/verify").await["last_seq"]
        .as_u64()
        .expect("last_seq");

    let r = d.anonymous().get("/metrics").await;
    assert_eq!(r.status, 200, "metrics need no token: {}", r.text);
    let text = r.text;

    // svc_scan_duration_seconds: a histogram with one observation per scan.
    assert!(text.contains("# TYPE svc_scan_duration_seconds histogram"), "{text}");
    assert_eq!(
        sample(&text, "svc_scan_duration_seconds_count", &[]),
        Some(2.0),
        "two scans observed"
    );
    let sum = sample(&text, "svc_scan_duration_seconds_sum", &[]).expect("histogram sum");
    let reported: f64 = scans.iter().map(|e| f(&e["meta"]["duration_ms"]) / 1000.0).sum();
    assert!(
        (sum - reported).abs() < 0.01,
        "duration sum {sum} equals the reports' {reported}"
    );
    assert_eq!(
        sample(&text, "svc_scan_duration_seconds_bucket", &[("le", "+Inf")]),
        Some(2.0)
    );

    // svc_nodes_discovered_total: per provider, summed over the scans.
    assert!(text.contains("# TYPE svc_nodes_discovered_total counter"), "{text}");
    let mut labelled = providers_of(&text, "svc_nodes_discovered_total");
    labelled.sort();
    let mut expected: Vec<String> = stats["providers"]
        .as_object()
        .expect("providers")
        .keys()
        .cloned()
        .collect();
    expected.sort();
    assert_eq!(labelled, expected, "one series per provider");
    for p in &expected {
        let want: f64 = scans.iter().map(|e| f(&e["meta"]["providers"][p.as_str()])).sum();
        let got = sample(&text, "svc_nodes_discovered_total", &[("provider", p)]);
        assert_eq!(got, Some(want), "nodes discovered for {p} over both scans");
    }

    // svc_waste_usd_total: the current projected waste.
    let waste = sample(&text, "svc_waste_usd_total", &[]).expect("svc_waste_usd_total");
    assert!(waste >= 0.0, "waste is a sum of costs: {waste}");
    let ledger = api.get_ok("/api/v1/waste-ledger").await;
    assert!(
        (waste - f(&ledger["totals"]["waste_usd_mo"])).abs() < 0.05,
        "waste {waste} vs {}",
        ledger["totals"]
    );
    assert!(
        waste > 0.0 && waste <= f(&stats["projected_savings_usd_mo"]) + 0.05,
        "{stats}"
    );

    assert_eq!(sample(&text, "svc_graph_nodes", &[]), Some(f(&stats["active_nodes"])));
    assert_eq!(sample(&text, "svc_graph_edges", &[]), Some(f(&stats["total_edges"])));
    assert_eq!(sample(&text, "svc_scans_total", &[("outcome", "success")]), Some(2.0));
    assert_eq!(sample(&text, "svc_ledger_events_total", &[]), Some(head as f64));
    let ok = [("method", "GET"), ("route", "/api/v1/graph/stats"), ("status", "200")];
    assert!(
        sample(&text, "svc_http_requests_total", &ok).is_some_and(|n| n >= 1.0),
        "stats requests counted"
    );
    let denied = [("method", "GET"), ("route", "/api/v1/graph/stats"), ("status", "401")];
    assert_eq!(
        sample(&text, "svc_http_requests_total", &denied),
        Some(1.0),
        "the refused request is counted"
    );

    // The daemon's own process: its resident memory as the kernel counts it.
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).expect("the daemon's status");
    let vm_rss_kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    let rss = sample(&text, "process_resident_memory_bytes", &[]).expect("process_resident_memory_bytes");
    let kernel = vm_rss_kib * 1024.0;
    assert!(
        (rss - kernel).abs() < kernel / 2.0,
        "process_resident_memory_bytes {rss} against VmRSS {kernel}"
    );
    assert!(sample(&text, "process_cpu_seconds_total", &[]).is_some(), "{text}");
    assert!(sample(&text, "process_open_fds", &[]).is_some_and(|n| n >= 3.0));

    // promtool accepts the exposition.
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("promtool not found: scripts/test installs it (Debian package prometheus)")
        }
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics failed ({}):\n{}{}\n--- exposition ---\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

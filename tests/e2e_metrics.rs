//! `/metrics` of a running daemon: the SPEC metrics with values that agree
//! with the API, and an exposition that `promtool check metrics` accepts.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{Daemon, QUIET_CONFIG, SVC, Sources};
use serde_json::{Value, json};

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

    promtool_accepts(&text);
}

/// `promtool check metrics` accepts `text`.
fn promtool_accepts(text: &str) {
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

/// The samples of `name`: each sample's labels (as `k="v",...`) and value.
fn series(text: &str, name: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (s, value) = line.rsplit_once(' ')?;
            let (metric, labels) = match s.split_once('{') {
                Some((m, rest)) => (m, rest.strip_suffix('}')?),
                None => (s, ""),
            };
            if metric != name {
                return None;
            }
            Some((labels.to_owned(), value.parse().ok()?))
        })
        .collect()
}

async fn metrics_text(d: &Daemon) -> String {
    let r = d.anonymous().get("/metrics").await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.text
}

/// The metrics an operator alerts on, through a real plugin process that
/// sends three malformed nodes per scan, with the compliance export on.
#[tokio::test]
async fn operator_metrics_follow_plugins_the_queue_and_the_export() {
    let dir = common::data_dir();
    let plugin = PathBuf::from(SVC).with_file_name("svc-plugin-mock");
    assert!(
        plugin.exists(),
        "{} is missing: cargo build -p svc-plugin-mock",
        plugin.display()
    );
    let out = Command::new(SVC)
        .args(["plugins", "install-local", "--name", "mock"])
        .arg(&plugin)
        .env("SVC_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bucket = dir.path().join("audit");
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "{QUIET_CONFIG}[plugins]\nactive = [\"mock\"]\n[plugins.config.mock]\nscale = 300\n[sau]\naudit_bucket = \"file://{}\"\naudit_export_interval = \"1h\"\n",
            bucket.display()
        ),
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 300);
    d.sources = Sources::Fallback;
    d.env = vec![("SVC_MOCK_FAIL".into(), "malformed_nodes".into())];
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let before = now();
    let scan = api.scan_wait().await;
    let after = now();
    assert_eq!(scan["sources"][0]["rejected"], 3, "{scan}");
    let text = metrics_text(&d).await;

    // The build.
    let build = series(&text, "svc_build_info");
    assert_eq!(build.len(), 1, "{text}");
    assert!(
        build[0]
            .0
            .contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{build:?}"
    );
    assert_eq!(build[0].1, 1.0);

    // The plugin's last successful scan: the one just asked for.
    let last = sample(
        &text,
        "svc_source_last_success_timestamp_seconds",
        &[("source", "mock")],
    )
    .unwrap_or_else(|| panic!("no last success for mock in\n{text}"));
    assert!(
        before <= last && last <= after,
        "{last} while the scan ran ({before} .. {after})"
    );

    // Up while active and scanning.
    assert_eq!(
        sample(&text, "svc_plugin_up", &[("plugin", "mock"), ("role", "provider")]),
        Some(1.0),
        "{text}"
    );
    // Three malformed nodes per scan, two scans.
    assert_eq!(
        sample(
            &text,
            "svc_plugin_rejected_items_total",
            &[("plugin", "mock"), ("reason", "invalid")]
        ),
        Some(6.0),
        "{text}"
    );

    // The queue per stage agrees with the API's.
    let queue = api.get_query_ok("/api/v1/remediation/queue", &[("limit", "1")]).await;
    let stages = ["flagged", "analyzed", "codegen", "sau_gate", "pending", "applied"];
    assert_eq!(
        series(&text, "svc_remediation_queue_depth").len(),
        stages.len(),
        "{text}"
    );
    let mut total = 0.0;
    for stage in stages {
        let depth = sample(&text, "svc_remediation_queue_depth", &[("stage", stage)]).unwrap();
        let savings = sample(&text, "svc_remediation_savings_usd", &[("stage", stage)]).unwrap();
        assert_eq!(depth, f(&queue["counts"][stage]), "{stage}: {queue}");
        assert!(
            (savings - f(&queue["savings_usd_mo"][stage])).abs() < 0.01,
            "{stage}: {savings} vs {queue}"
        );
        total += depth;
    }
    assert!(total > 0.0, "the mock estate has waste in the pipeline: {queue}");

    // Export lag: the events since the export at start wait.
    let lag = sample(&text, "svc_ledger_export_lag_events", &[]).expect("export lag");
    let head = api.get_ok("/api/v1/ledger/verify").await["last_seq"].as_u64().unwrap();
    assert!(lag >= 1.0 && lag <= head as f64, "lag {lag} of {head} events");
    let age = sample(&text, "svc_ledger_export_lag_seconds", &[]).unwrap();
    assert!(age > 0.0 && age < 600.0, "oldest unexported event {age} s old");
    promtool_accepts(&text);

    // Exported: nothing waits.
    let run = api.post_json("/api/v1/ledger/export", &json!({})).await.expect(200);
    let text = metrics_text(&d).await;
    let head = api.get_ok("/api/v1/ledger/verify").await["last_seq"].as_u64().unwrap();
    let through = run["exported_through"].as_u64().unwrap();
    let lag = sample(&text, "svc_ledger_export_lag_events", &[]).unwrap();
    assert!(
        lag <= (head - through) as f64,
        "lag {lag} after exporting through {through} of {head}"
    );
    if lag == 0.0 {
        assert_eq!(sample(&text, "svc_ledger_export_lag_seconds", &[]), Some(0.0));
    }

    // Turned off: down.
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);
    let text = metrics_text(&d).await;
    assert_eq!(
        sample(&text, "svc_plugin_up", &[("plugin", "mock"), ("role", "provider")]),
        Some(0.0),
        "{text}"
    );
    promtool_accepts(&text);
}

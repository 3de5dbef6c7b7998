//! `svc bench`: the short run (10^5 nodes, `--quick`) starts its own
//! daemon, scans through `svc-plugin-mock`, and writes a document that
//! `schemas/bench.schema.json` accepts (checked with the `jsonschema`
//! Python package of the repository's venv, which `scripts/test` installs
//! with schemathesis); `svc bench compare` and `svc bench table` read it
//! back. Bad input gets a clear error, and the daemons a run starts are
//! gone when it ends, also when it is interrupted.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::SVC;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `svc-plugin-mock`, built beside `svc` (`cargo build -p svc-plugin-mock`).
fn mock_plugin() -> PathBuf {
    let path = PathBuf::from(SVC).with_file_name("svc-plugin-mock");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p svc-plugin-mock` first",
        path.display()
    );
    path
}

/// The venv's Python with `jsonschema` (the venv `scripts/test` makes).
fn python() -> PathBuf {
    let candidates = [
        std::env::var_os("VIRTUAL_ENV").map(|v| PathBuf::from(v).join("bin/python3")),
        Some(repo().join(".venv/bin/python3")),
    ];
    for p in candidates.into_iter().flatten() {
        if p.exists()
            && Command::new(&p)
                .args(["-c", "import jsonschema"])
                .status()
                .is_ok_and(|s| s.success())
        {
            return p;
        }
    }
    panic!(
        "no Python with the jsonschema package in $VIRTUAL_ENV or {}: run the suite with scripts/test, \
         which installs it (with schemathesis) into .venv",
        repo().join(".venv").display()
    );
}

/// Validates `doc` against `schemas/bench.schema.json`; the validator's
/// complaint when it does not hold.
fn schema_errors(doc: &Path) -> Option<String> {
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)\n\
        errors = [f'{list(e.path)}: {e.message}' for e in v.iter_errors(json.load(open(sys.argv[2])))]\n\
        print('\\n'.join(errors))\n\
        sys.exit(1 if errors else 0)\n";
    let out = Command::new(python())
        .args(["-c", script])
        .arg(repo().join("schemas/bench.schema.json"))
        .arg(doc)
        .output()
        .unwrap();
    (!out.status.success()).then(|| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn svc(args: &[&str]) -> Output {
    Command::new(SVC)
        .args(args)
        .env_remove("SVC_URL")
        .env_remove("SVC_TOKEN")
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Processes whose environment names `dir` as their data directory: a
/// daemon of the bench and the plugins it started.
fn processes_on(dir: &Path) -> Vec<u32> {
    let want = format!("SVC_DATA_DIR={}", dir.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

/// A small document of the layout `svc bench` writes.
fn document(first_scan_ms: f64, ingest: f64) -> Value {
    json!({
        "schema_version": 1,
        "svc_version": "0.1.0",
        "git_commit": null,
        "build_profile": "release",
        "started_at": "2026-11-29T10:00:00Z",
        "finished_at": "2026-11-29T10:30:00Z",
        "machine": {"cpu_model": "Test CPU", "logical_cores": 2, "memory_total_bytes": 25769803776u64,
                    "kernel": "6.1", "os": "Debian", "arch": "x86_64"},
        "args": {"command": "svc bench --scales 1000000"},
        "runs": [{"scale": 1000000, "figures": {
            "nodes": 997673, "first_scan_ms": first_scan_ms,
            "first_scan_ingest_nodes_per_s": ingest, "vm_rss_bytes_per_node": 500
        }}]
    })
}

#[test]
fn a_short_run_writes_a_document_the_schema_accepts_and_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let doc_path = dir.path().join("bench.json");
    let out = Command::new(SVC)
        .args([
            "bench",
            "--scales",
            "100000",
            "--quick",
            "--later-scans",
            "1",
            "--scan-pause",
            "0s",
        ])
        .args(["--blast-samples", "50", "--http-requests", "40", "--ws-clients", "3"])
        .arg("--mock-plugin")
        .arg(mock_plugin())
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(&doc_path)
        .env_remove("SVC_URL")
        .env_remove("SVC_TOKEN")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "svc bench failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.is_empty(),
        "the document went to --out, yet stdout has:\n{stdout}"
    );
    if let Some(errors) = schema_errors(&doc_path) {
        panic!(
            "the document does not follow schemas/bench.schema.json:\n{errors}\n{}",
            std::fs::read_to_string(&doc_path).unwrap()
        );
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&doc_path).unwrap()).unwrap();
    assert_eq!(
        doc["build_profile"],
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
    assert_eq!(doc["args"]["quick"], true);
    let f = &doc["runs"][0]["figures"];
    assert_eq!(doc["runs"][0]["scale"], 100000);
    // The mock estate of 10^5 holds about that many resources, all of
    // them streamed by the plugin.
    let nodes = f["nodes"].as_f64().unwrap();
    assert!((90_000.0..=110_000.0).contains(&nodes), "{f}");
    assert!(f["first_scan_ingest_nodes_per_s"].as_f64().unwrap() > 0.0, "{f}");
    // Each scan's ten phases and its commit fit in its wall time (one
    // later scan: its medians are its own figures, which sum within it).
    for (scan, total) in [("first_scan", "first_scan_ms"), ("later_scan", "later_scan_max_ms")] {
        let phases: Vec<f64> = f
            .as_object()
            .unwrap()
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("{scan}_phase_")))
            .map(|(_, v)| v.as_f64().unwrap())
            .collect();
        assert_eq!(phases.len(), 10, "{scan}: {f}");
        assert!(f[format!("{scan}_phase_plugin_scan_ms")].as_f64().unwrap() > 0.0, "{f}");
        let inside = phases.iter().sum::<f64>() + f[format!("{scan}_commit_ms")].as_f64().unwrap();
        assert!(inside <= f[total].as_f64().unwrap() + 10.0, "{scan}: {inside} ms: {f}");
    }
    assert!(f["policy_pass_nodes"].as_f64().unwrap() >= nodes * 0.9, "{f}");
    assert_eq!(f["blast_radius_samples"], 50, "{f}");
    assert!(f["blast_radius_p99_us"].as_f64().unwrap() >= f["blast_radius_p50_us"].as_f64().unwrap());
    assert!(f["topology_bytes"].as_f64().unwrap() > nodes * 100.0, "{f}");
    assert_eq!(
        f["ws_deliveries"],
        json!(f["ws_scan_events"].as_u64().unwrap() * 3),
        "{f}"
    );
    assert!(f["vm_rss_bytes_per_node"].as_f64().unwrap() > 0.0, "{f}");
    assert!(f["restart_to_ready_ms"].as_f64().unwrap() > 0.0, "{f}");
    // The data directory was removed, and nothing of the run still runs.
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // Against itself: every figure the same, ratio 1.
    let doc_arg = doc_path.to_str().unwrap();
    let out = svc(&["bench", "compare", doc_arg, doc_arg, "-o", "json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(rows.len(), f.as_object().unwrap().len(), "{stdout}");
    for r in &rows {
        assert!(r["ratio"] == json!(1.0) || r["ratio"].is_null(), "{r}");
        assert!(["same", "-"].contains(&r["verdict"].as_str().unwrap()), "{r}");
    }
    // PERF.md's rows: one a figure, the scale's value in bold.
    let out = svc(&["bench", "table", doc_arg]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("| what is measured | budget | current figure | command | date | machine |"));
    let row = stdout.lines().find(|l| l.contains("(`first_scan_ms`)")).unwrap();
    assert!(row.contains("10^5: **"), "{row}");
    assert!(row.contains("`svc bench --scales 100000 --quick"), "{row}");
    assert_eq!(stdout.lines().count(), 2 + f.as_object().unwrap().len(), "{stdout}");
}

#[test]
fn compare_prints_each_figure_beside_the_baseline_with_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let cur = write(dir.path(), "cur.json", &document(2000.0, 500_000.0));
    let base = write(dir.path(), "base.json", &document(1000.0, 1_000_000.0));
    let out = svc(&["bench", "compare", cur.to_str().unwrap(), base.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let header = stdout.lines().next().unwrap();
    for col in ["scale", "figure", "baseline", "current", "ratio", "better", "verdict"] {
        assert!(header.contains(col), "{header}");
    }
    let row = |name: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{stdout}"))
            .split("  ")
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty())
            .collect()
    };
    assert_eq!(
        row("first_scan_ms"),
        ["10^6", "first_scan_ms", "1 s", "2 s", "2.00", "lower", "worse"]
    );
    assert_eq!(
        row("first_scan_ingest_nodes_per_s"),
        [
            "10^6",
            "first_scan_ingest_nodes_per_s",
            "1 M/s",
            "500k/s",
            "0.50",
            "higher",
            "worse"
        ]
    );
    assert_eq!(row("nodes")[4..], ["1.00", "-", "-"]);
    // Swapped, the same figures are better.
    let out = svc(&[
        "bench",
        "compare",
        base.to_str().unwrap(),
        cur.to_str().unwrap(),
        "-o",
        "json",
    ]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let first = rows.iter().find(|r| r["figure"] == "first_scan_ms").unwrap();
    assert_eq!(
        (&first["ratio"], &first["better"], &first["verdict"]),
        (&json!(0.5), &json!("lower"), &json!("better"))
    );
}

#[test]
fn the_table_gives_perf_rows_with_budget_command_date_and_machine() {
    let dir = tempfile::tempdir().unwrap();
    let doc = write(dir.path(), "doc.json", &document(4260.0, 486_000.0));
    let out = svc(&["bench", "table", doc.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let row = stdout.lines().find(|l| l.contains("(`first_scan_ms`)")).unwrap();
    let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
    assert_eq!(cells.len(), 6, "{row}");
    assert!(cells[1].contains("<= 5 s at 1M"), "{row}");
    assert_eq!(cells[2], "10^6: **4.26 s**");
    assert_eq!(cells[3], "`svc bench --scales 1000000` (release build)");
    assert_eq!(cells[4], "2026-11-29 10:00");
    assert_eq!(cells[5], "2 vCPU Test CPU, 24.0 GiB");
    let ingest = stdout
        .lines()
        .find(|l| l.contains("(`first_scan_ingest_nodes_per_s`)"))
        .unwrap();
    assert!(
        ingest.contains("**486k/s**") && ingest.contains(">= 1,000,000 nodes/s"),
        "{ingest}"
    );
}

#[test]
fn bad_baselines_and_documents_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.json", &document(1.0, 1.0));
    let not_json = dir.path().join("notes.txt");
    std::fs::write(&not_json, "first scan: fast\n").unwrap();
    let no_runs = write(dir.path(), "other.json", &json!({"schema_version": 1, "name": "x"}));
    let newer = write(dir.path(), "newer.json", &json!({"schema_version": 99, "runs": []}));
    let missing = dir.path().join("missing.json");
    let cases: [(&Path, &str); 4] = [
        (&missing, "cannot read"),
        (&not_json, "is not JSON"),
        (&no_runs, "it has no runs"),
        (&newer, "schema_version is 99"),
    ];
    for (bad, why) in cases {
        // As a baseline of a run: refused before any daemon starts.
        let work = dir.path().join("work");
        let out = Command::new(SVC)
            .args(["bench", "--scales", "1000", "--compare"])
            .arg(bad)
            .arg("--work-dir")
            .arg(&work)
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{} was taken as a baseline", bad.display());
        assert!(
            stderr.contains(why) && stderr.contains("--compare"),
            "{why:?} not in:\n{stderr}"
        );
        assert!(!work.exists() || std::fs::read_dir(&work).unwrap().next().is_none());
        for args in [
            vec!["bench", "compare", good.to_str().unwrap(), bad.to_str().unwrap()],
            vec!["bench", "table", bad.to_str().unwrap()],
        ] {
            let out = svc(&args);
            let (_, stderr) = text(&out);
            assert!(!out.status.success(), "{args:?} succeeded");
            assert!(stderr.contains(why), "{args:?}: {why:?} not in:\n{stderr}");
        }
    }
    let out = svc(&["bench", "--scales", "0"]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("--scales needs one or more sizes above zero"));
    let out = svc(&[
        "bench",
        "--scales",
        "1000",
        "--mock-plugin",
        "/nonexistent/svc-plugin-mock",
    ]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("/nonexistent/svc-plugin-mock: no such file"));
}

#[test]
fn a_busy_port_is_a_clear_error_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let out = Command::new(SVC)
        .args(["bench", "--scales", "2000", "--quick", "--listen", &addr])
        .arg("--mock-plugin")
        .arg(mock_plugin())
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "ran on a busy port:\n{stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("the daemon exited while starting") && stderr.contains(&format!("is {addr} in use?")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "the daemon's own reason:\n{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "data directory left behind"
    );
    drop(busy);
}

#[test]
fn ctrl_c_stops_the_daemon_and_its_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let mut child = Command::new(SVC)
        .args(["bench", "--scales", "3000", "--quick"])
        .arg("--mock-plugin")
        .arg(mock_plugin())
        .arg("--work-dir")
        .arg(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Once the first scan is awaited, the daemon runs and has its plugins.
    let deadline = Instant::now() + common::SCAN_DEADLINE;
    let mut seen = String::new();
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no first scan announced:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("first scan") {
            break;
        }
    }
    let data = std::fs::read_dir(&work).unwrap().next().unwrap().unwrap().path();
    let running = loop {
        let pids = processes_on(&data);
        if !pids.is_empty() {
            break pids;
        }
        assert!(Instant::now() < deadline, "no daemon on {}", data.display());
        std::thread::sleep(common::POLL_PAUSE);
    };
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "svc bench did not exit after Ctrl-C");
        std::thread::sleep(common::POLL_PAUSE);
    };
    let rest: String = rx.try_iter().collect::<Vec<_>>().join("\n");
    assert_eq!(exit.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted (Ctrl-C); the daemon was stopped"), "{rest}");
    // Every process of the run is gone (zombies reaped by init aside).
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let alive: Vec<u32> = processes_on(&data)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| !r.starts_with('Z')))
            })
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < until,
            "still running after Ctrl-C: {alive:?} (were {running:?})"
        );
        std::thread::sleep(common::POLL_PAUSE);
    }
    assert!(!data.exists(), "data directory left behind");
}

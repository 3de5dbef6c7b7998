//! `svc scan` following a scan: the phases it prints as the progress
//! endpoint reports them, a failed scan, Ctrl-C (the client stops, not the
//! scan), and the blocking wait on a daemon without the endpoint. The
//! daemon here is a scripted stand-in serving the endpoint's contract, so
//! every phase is seen whatever the machine's speed; `tests/e2e_cli.rs`
//! follows real scans of a real daemon.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The answers the stand-in gives, in turn; the last one again and again
/// until `finish` is set, then the scan's end.
struct Script {
    progress: Vec<Value>,
    finish: AtomicBool,
    served: AtomicUsize,
    polled: Notify,
    scan_bodies: parking_lot::Mutex<Vec<Value>>,
}

fn phase(index: u64, name: &str, nodes: u64) -> Value {
    json!({
        "scanning": true, "scan_seq": 7, "phase": name, "phase_index": index, "phase_count": 10,
        "nodes": nodes, "edges": nodes / 2, "elapsed_ms": index * 100,
        "sources": [{"name": "mock", "nodes": nodes, "edges": nodes / 2, "state": "scanning", "error": null}],
        "last_scan": {"scan_seq": 6, "ok": true, "duration_ms": 10, "node_count": 1, "edge_count": 0, "error": null}
    })
}

fn ended(ok: bool) -> Value {
    json!({
        "scanning": false, "scan_seq": 7, "phase": null, "phase_index": 0, "phase_count": 10,
        "nodes": 0, "edges": 0, "elapsed_ms": 0, "sources": [],
        "last_scan": {"scan_seq": 7, "ok": ok, "duration_ms": 1234, "node_count": 42, "edge_count": 9,
                      "error": if ok { Value::Null } else { json!("source mock failed: boom") }}
    })
}

async fn progress(State(s): State<Arc<Script>>) -> Json<Value> {
    let n = s.served.fetch_add(1, Ordering::SeqCst);
    s.polled.notify_one();
    if s.finish.load(Ordering::SeqCst) {
        return Json(ended(true));
    }
    Json(s.progress[n.min(s.progress.len() - 1)].clone())
}

/// Scan 7's report, as a waiting scan answers it and its SCAN_COMPLETED holds it.
fn report() -> Value {
    json!({"scan_seq": 7, "duration_ms": 55, "node_count": 42,
        "edge_count": 9, "waste_count": 3, "waste_usd_mo": 1.5, "cost_usd_mo": 10.0,
        "nodes_added": 42, "nodes_changed": 0, "nodes_deleted": 0, "sources": []})
}

/// The ledger's SCAN_COMPLETED events, newest first: scan 7's once it ended.
async fn history(State(s): State<Arc<Script>>) -> Json<Value> {
    let mut events = vec![json!({"type": "SCAN_COMPLETED", "meta": {"scan_seq": 6}})];
    if s.finish.load(Ordering::SeqCst) || s.progress.last().is_some_and(|p| p["scanning"] == false) {
        events.insert(0, json!({"type": "SCAN_COMPLETED", "meta": report()}));
    }
    Json(json!({"events": events}))
}

async fn start(State(s): State<Arc<Script>>, Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
    let wait = body["wait"] == json!(true);
    s.scan_bodies.lock().push(body);
    if wait {
        return (StatusCode::OK, Json(report()));
    }
    (
        StatusCode::ACCEPTED,
        Json(json!({"status": "started", "scan_seq": 7, "cycle": "scan"})),
    )
}

/// Serves the script (with the progress endpoint or without); its URL.
async fn stand_in(progress_answers: Vec<Value>, with_progress: bool) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        progress: progress_answers,
        served: AtomicUsize::new(0),
        finish: AtomicBool::new(false),
        polled: Notify::new(),
        scan_bodies: parking_lot::Mutex::new(Vec::new()),
    });
    let mut app = axum::Router::new()
        .route("/api/v1/engine/scan", post(start))
        .route("/api/v1/history", get(history));
    if with_progress {
        app = app.route("/api/v1/engine/scan/progress", get(progress));
    }
    let app = app.with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, script)
}

fn env(url: &str) -> Vec<(&str, &str)> {
    vec![("SVC_URL", url), ("SVC_TOKEN", "t")]
}

#[tokio::test]
async fn scan_prints_each_phase_then_the_totals() {
    let answers = vec![
        phase(0, "engine.plugin_scan", 0),
        phase(1, "engine.plugin_scan", 10),
        phase(1, "engine.plugin_scan", 20),
        phase(4, "engine.reachability", 40),
        phase(10, "commit", 42),
        ended(true),
    ];
    let (url, script) = stand_in(answers, true).await;
    let (code, out, err) = common::run_cli(&["scan", "--timeout", "90s"], &env(&url)).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        out.trim(),
        "scan 7 completed in 55 ms: 42 nodes, 9 edges, 3 waste ($1.50/mo of $10.00/mo)\nchanges: 42 added, 0 changed, 0 deleted",
        "the report of the scan's SCAN_COMPLETED: {err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("phase ")).collect();
    assert_eq!(
        lines,
        [
            "phase 1/10 engine.plugin_scan: 10 nodes, 5 edges (0.1s)",
            "phase 4/10 engine.reachability: 40 nodes, 20 edges (0.4s)",
            "phase 10/10 commit: 42 nodes, 21 edges (1.0s)",
        ],
        "one line per phase change:\n{err}"
    );
    let bodies = script.scan_bodies.lock().clone();
    assert_eq!(
        bodies,
        [json!({"wait": false, "timeout": "1m 30s"})],
        "started without waiting"
    );

    let (url, _) = stand_in(vec![phase(2, "engine.plugin_scan", 5), ended(true)], true).await;
    let (code, out, _) = common::run_cli(&["scan", "-o", "json"], &env(&url)).await;
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, report(), "-o json: the scan's report");
}

#[tokio::test]
async fn a_failed_scan_exits_1_with_why() {
    let (url, _) = stand_in(vec![phase(1, "engine.plugin_scan", 5), ended(false)], true).await;
    let (code, out, err) = common::run_cli(&["scan"], &env(&url)).await;
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("scan 7 FAILED"), "{out}");
    assert!(err.contains("boom"), "{err}");
}

#[tokio::test]
async fn ctrl_c_stops_following_not_the_scan() {
    let (url, script) = stand_in(vec![phase(1, "engine.plugin_scan", 5)], true).await;
    let child = tokio::process::Command::new(common::SVC)
        .arg("scan")
        .env_remove("SVC_DATA_DIR")
        .env("SVC_URL", &url)
        .env("SVC_TOKEN", "t")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Polling has begun (the probe, then the first poll after the start).
    while script.served.load(Ordering::SeqCst) < 3 {
        script.polled.notified().await;
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::time::timeout(common::SCAN_DEADLINE, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("scan 7 goes on"), "{err}");
    assert_eq!(script.scan_bodies.lock().len(), 1, "one scan started, none cancelled");
}

#[tokio::test]
async fn a_daemon_without_progress_is_waited_on() {
    let (url, script) = stand_in(Vec::new(), false).await;
    let (code, out, err) = common::run_cli(&["scan"], &env(&url)).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("scan 7 completed in 55 ms: 42 nodes"), "{out}");
    assert_eq!(script.scan_bodies.lock().clone(), [json!({"wait": true})]);
}

#[tokio::test]
async fn on_a_terminal_scan_draws_a_bar_in_place() {
    let (url, script) = stand_in(vec![phase(4, "engine.reachability", 40)], true).await;
    let pane = common::tmux::Tmux::start(&format!("SVC_URL={url} SVC_TOKEN=t {} scan", common::SVC), 120, 8);
    let within = Duration::from_secs(30);
    let screen = pane
        .wait_for(
            "[########------------] 4/10 engine.reachability  40 nodes, 20 edges",
            within,
        )
        .await;
    assert!(
        screen.contains("[mock scanning]"),
        "the sources still scanning:\n{screen}"
    );
    script.finish.store(true, Ordering::SeqCst);
    let screen = pane.wait_for("scan 7 completed", within).await;
    assert!(
        !screen.contains("[####"),
        "the bar is cleared once the scan ended:\n{screen}"
    );
    assert!(
        screen.lines().any(|l| l.starts_with("scan 7 completed in 55 ms")),
        "{screen}"
    );
}

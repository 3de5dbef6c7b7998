//! `svc bench soak` on a small estate for a short run: it starts its own
//! daemon, drives scans, readers, WebSocket clients and a burst, prints
//! the memory table and the summary, stops the daemon and exits 0 when
//! nothing failed.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::process::Command;

#[test]
fn a_short_soak_runs_clean_and_reports_the_memory() {
    let dir = common::data_dir();
    let data = dir.path().join("soak");
    let out = Command::new(common::SVC)
        .args(["bench", "soak", "--scale", "300", "--duration", "16s", "--warmup", "4s"])
        .args([
            "--sample",
            "4s",
            "--burst",
            "4s",
            "--after-burst",
            "4s",
            "--burst-readers",
            "8",
        ])
        .args([
            "--readers",
            "2",
            "--ws-clients",
            "2",
            "--ws-session",
            "3s",
            "--scan-pause",
            "1s",
        ])
        .arg("--data-dir")
        .arg(&data)
        .env_remove("SVC_URL")
        .env_remove("SVC_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "soak failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for phase in ["warm-up", "steady", "burst", "after"] {
        assert!(
            stdout.lines().any(|l| l.split_whitespace().nth(1) == Some(phase)),
            "no {phase} sample:\n{stdout}"
        );
    }
    for line in [
        "RSS after warm-up",
        "RSS drift over the steady part",
        "RSS peak under the burst (8 readers more)",
        "RSS after the burst",
        "GET /api/v1/graph/nodes/{crn}",
        "GET /api/v1/history (pages of 100)",
        "POST /api/v1/engine/scan (wait)",
        "failures 0",
    ] {
        assert!(stdout.contains(line), "{line:?} missing:\n{stdout}");
    }
    // The daemon it started was stopped: its data directory was given, so
    // it is kept, with the daemon's log beside the stores.
    let log = std::fs::read_to_string(data.join("daemon.log")).unwrap();
    assert!(log.contains("listening on"), "{log}");
}

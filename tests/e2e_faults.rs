//! Faults and hostile input against the real daemon: what it refuses, and
//! that it reports itself ready only while it makes progress.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::Daemon;
use serde_json::{Value, json};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// A scan interval so long that a timer set to it overflows the clock is
/// refused, with nothing changed; the scheduler keeps running, takes the
/// next interval set and scans on it, and the daemon stays ready.
#[tokio::test]
async fn an_interval_past_the_clock_is_refused_and_the_scheduler_keeps_running() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), 300).await;
    let api = d.api();
    let head = u(&api.scan_wait().await["event_seq"]);
    for bad in ["500000000y", "400d"] {
        let e = api
            .put_json("/api/v1/config", &json!({"daemon": {"scan_interval": bad}}))
            .await
            .expect_error(422, "invalid");
        let message = e["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("at most 365d"), "{message}");
    }
    assert_eq!(api.get_ok("/api/v1/config").await["daemon"]["scan_interval"], "1h");
    d.anonymous().get("/readyz").await.expect(200);

    api.put_json("/api/v1/config", &json!({"daemon": {"scan_interval": "1s"}}))
        .await
        .expect(200);
    let scheduled = d.wait_scan_after(head).await;
    assert!(u(&scheduled["seq"]) > head, "{scheduled}");
    d.anonymous().get("/readyz").await.expect(200);
    let metrics = d.anonymous().get("/metrics").await.text;
    assert!(metrics.contains("\nsvc_ready 1\n"), "{metrics}");
}

/// What the daemon keeps is its owner's alone: the data directory is made
/// private, and the configuration API never shows a credential.
#[tokio::test]
async fn secrets_stay_in_the_data_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::data_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "{}[ai]\napi_key = \"sk-live-1\"\n[plugins.config.aws]\nsecret_access_key = \"aws-s3cr3t\"\n",
            common::QUIET_CONFIG
        ),
    )
    .unwrap();
    let d = Daemon::start(dir.path(), 300).await;
    let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let api = d.api();
    let shown = api.get_ok("/api/v1/config").await;
    assert_eq!(shown["ai"]["api_key"], "(hidden)");
    assert_eq!(shown["plugins"]["config"]["aws"]["secret_access_key"], "(hidden)");
    let text = shown.to_string();
    assert!(!text.contains("sk-live") && !text.contains("aws-s3cr3t"), "{text}");
    // Sending back what was read changes no secret.
    let answer = api.put_json("/api/v1/config", &shown).await.expect(200);
    assert_eq!(answer, shown);
    let file = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
    assert!(file.contains("sk-live-1") && file.contains("aws-s3cr3t"), "{file}");
}

/// The export bucket stays where the operator's data may go: not the data
/// directory, not the system's trees, not a path with NUL, not a chain of
/// directories the daemon would create; refused when set, not at export.
#[tokio::test]
async fn the_export_bucket_cannot_point_anywhere() {
    let dir = common::data_dir();
    let d = Daemon::start(dir.path(), 300).await;
    let api = d.api();
    let data = dir.path().display().to_string();
    for (bad, why) in [
        (format!("file://{data}"), "is the data directory"),
        ("file:///etc".to_owned(), "belongs to the system"),
        ("file:///proc/self".to_owned(), "belongs to the system"),
        (format!("file://{data}/a\u{0}b"), "NUL"),
        (format!("file://{data}/no/such/dir"), "parent directory does not exist"),
    ] {
        let e = api
            .put_json("/api/v1/config", &json!({"sau": {"audit_bucket": bad}}))
            .await
            .expect_error(422, "invalid");
        let message = e["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{bad}: {message}");
    }
    assert!(api.get_ok("/api/v1/config").await["sau"]["audit_bucket"].is_null());
    let ok = format!("file://{data}/audit");
    api.put_json("/api/v1/config", &json!({"sau": {"audit_bucket": ok}}))
        .await
        .expect(200);
}

/// Flips the first byte of every occurrence of `needle` in `path` to 0xFF
/// (not UTF-8), as a failing disk would; returns how many it changed.
fn flip_every(path: &std::path::Path, needle: &[u8]) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    let mut at = Vec::new();
    for i in 0..bytes.len().saturating_sub(needle.len()) {
        if &bytes[i..i + needle.len()] == needle {
            at.push(i);
        }
    }
    for &i in &at {
        bytes[i] = 0xFF;
    }
    std::fs::write(path, bytes).unwrap();
    at.len()
}

/// Every line of the `ledger-*.jsonl.gz` objects in `dir`.
fn exported_lines(dir: &std::path::Path) -> Vec<Value> {
    use std::io::Read;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .unwrap();
        out.extend(text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
    }
    out
}

/// One event of `events.redb` damaged on disk: the daemon starts, finds the
/// break by itself and says so (`/readyz`, `svc_ready`, the log); nothing is
/// appended onto the broken chain; history shows the damaged event as
/// UNREADABLE instead of failing; the export writes everything before the
/// break and stops there.
#[tokio::test]
async fn a_damaged_event_stops_appends_and_the_daemon_says_so() {
    let dir = common::data_dir();
    let bucket = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "{}[sau]\naudit_bucket = \"file://{}\"\naudit_export_interval = \"1h\"\n",
            common::QUIET_CONFIG,
            bucket.path().display()
        ),
    )
    .unwrap();
    let mut d = Daemon::start_scanned(dir.path(), 300).await;
    let api = d.api();
    let crns: Vec<String> = api
        .all_nodes(None)
        .await
        .iter()
        .take(6)
        .map(|n| n["crn"].as_str().unwrap().to_owned())
        .collect();
    for (i, crn) in crns.iter().enumerate() {
        api.post_json(
            "/api/v1/isolation",
            &json!({"crn": crn, "reason_code": format!("mark-{i}-zq"), "ttl_seconds": 0}),
        )
        .await
        .expect(200);
    }
    let events = api.history_all(&[]).await;
    let target = events
        .iter()
        .find(|e| e["meta"]["reason_code"] == "mark-3-zq")
        .map(|e| u(&e["seq"]))
        .unwrap();
    let last = u(&events[0]["seq"]);
    assert!(target < last, "{target} {last}");
    d.stop().await;
    assert!(flip_every(&dir.path().join("events.redb"), b"mark-3-zq") > 0);

    d.sources = common::Sources::None;
    d.launch_listening().await;
    let unready = d.wait_unready("broken").await;
    let why = unready["error"]["message"].as_str().unwrap();
    assert!(why.contains(&format!("broken at event {target}")), "{why}");
    let metrics = d.anonymous().get("/metrics").await.text;
    assert!(metrics.contains("\nsvc_ready 0\n"), "{metrics}");
    assert!(
        d.log
            .text()
            .contains("the ledger's chain is broken; appends are stopped")
    );

    let api = d.api();
    let shown = api.history_all(&[]).await;
    assert_eq!(u(&shown[0]["seq"]), last, "nothing was appended at start");
    let damaged = shown.iter().find(|e| u(&e["seq"]) == target).unwrap();
    assert_eq!(damaged["type"], "UNREADABLE", "{damaged}");
    let refused = api
        .post_json(
            "/api/v1/isolation",
            &json!({"crn": crns[0], "reason_code": "after", "ttl_seconds": 0}),
        )
        .await
        .expect_error(503, "not_ready");
    assert!(refused.to_string().contains("broken at event"), "{refused}");
    assert_eq!(u(&api.history_all(&[]).await[0]["seq"]), last);

    let export = api
        .post_json("/api/v1/ledger/export", &json!({}))
        .await
        .expect_error(503, "not_ready");
    assert!(export.to_string().contains("broken at event"), "{export}");
    let lines = exported_lines(bucket.path());
    let seqs: Vec<u64> = lines.iter().map(|l| u(&l["event_idx"])).collect();
    assert_eq!(
        seqs,
        (1..target).collect::<Vec<u64>>(),
        "everything before the break, nothing after"
    );
}

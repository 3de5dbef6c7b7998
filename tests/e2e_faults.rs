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

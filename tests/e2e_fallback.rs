//! Without `--mock`, a daemon that finds no cloud credentials and no active
//! plugins says so and scans the mock estate, and `graph/stats` and `svc
//! stats` say the graph is simulated; one asked for a provider plugin that
//! is not installed does not. One that finds AWS credentials without the
//! AWS plugin says how to install and activate it.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::{Daemon, Sources, run_cli};
use serde_json::json;

#[tokio::test]
async fn no_credentials_and_no_plugins_fall_back_to_the_mock_estate() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::configure(dir.path(), 300);
    d.sources = Sources::Fallback;
    d.launch().await;
    let scan = d.wait_scan_after(0).await;
    let nodes = scan["payload"]["node_count"].as_u64().unwrap();
    assert!(nodes > 250, "the mock estate was scanned: {scan}");
    let providers = scan["payload"]["providers"].as_object().unwrap();
    for p in ["aws", "gcp", "azure", "kubernetes"] {
        assert!(providers.contains_key(p), "{p} in {scan}");
    }
    let log = d.log.text();
    assert!(
        log.contains("mock mode: no cloud credentials and no active plugins found"),
        "the fallback is logged clearly:\n{log}"
    );

    // The statistics say where the graph came from: the simulated estate.
    let stats = d.api().get_ok("/api/v1/graph/stats").await;
    assert_eq!(stats["simulated"], true, "{stats}");
    let sources = stats["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{stats}");
    let mock = &sources[0];
    assert_eq!(
        (&mock["name"], &mock["simulated"]),
        (&json!("mock"), &json!(true)),
        "{stats}"
    );
    for p in ["aws", "gcp", "azure", "kubernetes"] {
        assert!(
            mock["providers"].as_array().unwrap().contains(&json!(p)),
            "{p} in {stats}"
        );
    }
    let last = &mock["last_scan"];
    assert_eq!(
        (&last["ok"], &last["scan_seq"], &last["error"], &last["nodes"]),
        (&json!(true), &json!(1), &json!(""), &json!(nodes)),
        "{stats}"
    );
    assert!(last["finished_at"].as_str().unwrap().ends_with('Z'), "{stats}");
    let data = dir.path().to_str().unwrap();
    let base = d.base();
    let (code, out, err) = run_cli(&["stats"], &[("SVC_URL", &base), ("SVC_DATA_DIR", data)]).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("simulated      yes"), "{out}");
    assert!(
        out.contains("source         mock (simulated; aws, azure, gcp, kubernetes): last scan 1 ok at"),
        "{out}"
    );
}

#[tokio::test]
async fn a_plugin_asked_for_but_not_installed_keeps_the_mock_estate_out() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[daemon]\nscan_interval = \"1h\"\n[plugins]\nactive = [\"aws\"]\n",
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 300);
    d.sources = Sources::Fallback;
    d.launch().await;
    let scan = d.wait_scan_after(0).await;
    assert_eq!(scan["payload"]["node_count"], 0, "nothing simulated: {scan}");
    assert_eq!(scan["payload"]["sources"], serde_json::json!([]), "{scan}");
    let log = d.log.text();
    assert!(
        log.contains("plugins.active names a plugin that is not installed") && log.contains("aws"),
        "{log}"
    );
    assert!(!log.contains("mock mode"), "{log}");
    let stats = d.api().get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        (&stats["simulated"], &stats["sources"]),
        (&json!(false), &json!([])),
        "{stats}"
    );
}

/// AWS credentials from a profile, and no AWS plugin: the daemon names
/// where it found them, the command that installs the plugin and the lines
/// that activate it, and scans nothing simulated in their place.
#[tokio::test]
async fn aws_credentials_without_the_aws_plugin_say_how_to_install_and_activate_it() {
    let dir = tempfile::tempdir().unwrap();
    let aws = dir.path().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        "[e2e]\naws_access_key_id = AKIAE2E\naws_secret_access_key = secret\n",
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 300);
    // HOME is the data directory: its ~/.aws/credentials is the one above.
    d.sources = Sources::Fallback;
    d.env = vec![("AWS_PROFILE".into(), "e2e".into())];
    d.launch().await;
    let scan = d.wait_scan_after(0).await;
    assert_eq!(scan["payload"]["node_count"], 0, "nothing simulated: {scan}");
    let log = d.log.text();
    for part in [
        "aws credentials found (AWS_PROFILE, ~/.aws/credentials), but no aws plugin is installed",
        "`cargo build --release -p svc-plugin-aws` then `svc plugins install-local target/release/svc-plugin-aws`",
        r#"`[plugins]` `active = ["aws"]`"#,
        "`svc plugins toggle aws`",
        "[plugins.config.aws]",
    ] {
        assert!(log.contains(part), "{part:?} not in the log:\n{log}");
    }
    assert!(!log.contains("mock mode"), "{log}");
    let stats = d.api().get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        (&stats["simulated"], &stats["sources"]),
        (&json!(false), &json!([])),
        "{stats}"
    );
}

//! Without `--mock`, a daemon that finds no cloud credentials and no active
//! plugins says so and scans the mock estate; one asked for a provider
//! plugin that is not installed does not.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use common::{Daemon, Sources};

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
}

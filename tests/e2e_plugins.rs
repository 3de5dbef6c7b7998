//! Scanning through a real plugin process: `svc plugins install-local`
//! puts `svc-plugin-mock` into the data directory, `plugins.active` turns it
//! on, and the daemon (without `--mock` and without credentials) scans it
//! over the go-plugin protocol. A plugin that crashes fails only its own
//! scan and deletes nothing; a tampered binary is listed and never started,
//! and its scans fail with the reason.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{Api, Daemon, QUIET_CONFIG, SVC, Sources, running};
use serde_json::{Value, json};

/// `svc-plugin-mock`, built beside `svc` by `cargo test --workspace`.
fn mock_plugin() -> PathBuf {
    let path = PathBuf::from(SVC).with_file_name("svc-plugin-mock");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p svc-plugin-mock` first",
        path.display()
    );
    path
}

fn install(dir: &std::path::Path) {
    install_as(dir, "mock");
}

/// Installs `svc-plugin-mock` under the plugin name `name`.
fn install_as(dir: &std::path::Path, name: &str) {
    let out = Command::new(SVC)
        .args(["plugins", "install-local", "--name", name])
        .arg(mock_plugin())
        .env("SVC_DATA_DIR", dir)
        .output()
        .expect("run svc plugins install-local");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join(format!("plugins/svc-plugin-{name}")).exists());
    assert!(dir.join(format!("plugins/svc-plugin-{name}.yaml")).exists());
}

/// A daemon on `dir` without `--mock` (so without credentials it may fall
/// back to the mock estate of `scale` nodes), `config` as its
/// `config.toml`; not started yet.
fn daemon(dir: &std::path::Path, config: &str, scale: usize) -> Daemon {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let mut d = Daemon::configure(dir, scale);
    d.sources = Sources::Fallback;
    d
}

/// The quiet configuration (only the scans the test asks for run after the
/// first) with plugin `active` turned on.
fn hourly(active: &str) -> String {
    format!("{QUIET_CONFIG}[plugins]\nactive = [\"{active}\"]\n")
}

/// A scan through the API, waited for: its one source.
async fn scan_one_source(api: &Api) -> Value {
    let r = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    assert_eq!(r["sources"].as_array().unwrap().len(), 1, "{r}");
    r["sources"][0].clone()
}

/// A scan through the API, waited for, that scanned the mock plugin alone,
/// successfully: its source.
async fn scan_the_plugin(api: &Api) -> Value {
    let src = scan_one_source(api).await;
    assert_eq!(
        (&src["providers"], &src["ok"]),
        (&json!(["mock"]), &json!(true)),
        "{src}"
    );
    src
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

#[tokio::test]
async fn the_daemon_scans_an_installed_plugin_and_survives_its_failures() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(
        dir.path(),
        &(hourly("mock") + "[plugins.config.mock]\nscale = 400\nbatch_size = 100\n"),
        400,
    );
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let p = &first["payload"];
    assert!(u(&p["node_count"]) > 350, "the plugin's estate (scale 400): {first}");
    assert_eq!(p["sources"][0]["name"], "mock");
    assert_eq!(p["sources"][0]["ok"], true);
    assert_eq!(
        p["sources"].as_array().unwrap().len(),
        1,
        "no mock fallback beside an active plugin"
    );
    assert!(!d.log.text().contains("no cloud credentials and no active plugins"));

    let api = d.api();
    let plugins = api.get_ok("/api/v1/plugins").await;
    assert_eq!(plugins[0]["name"], "mock");
    assert_eq!(plugins[0]["active"], true);
    assert_eq!(plugins[0]["status"], "verified");
    assert_eq!(plugins[0]["category"], "cloud");
    assert!(plugins[0]["color"].as_str().unwrap().starts_with('#'));

    // A scan of just this provider works; an unknown provider is refused.
    let r = api
        .post_json("/api/v1/engine/scan", &json!({"provider": "mock", "wait": true}))
        .await
        .expect(200);
    assert_eq!(r["sources"][0]["ok"], true);
    api.post_json("/api/v1/engine/scan", &json!({"provider": "gcp"}))
        .await
        .expect_error(422, "invalid");

    // Toggled off: persisted, and scanning its provider is refused with the SPEC's words.
    let t = api
        .post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);
    assert_eq!(t["active"], false);
    let config = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
    assert!(config.contains("active = []"), "{config}");
    let e = api
        .post_json("/api/v1/engine/scan", &json!({"provider": "mock"}))
        .await
        .expect_error(422, "invalid");
    assert_eq!(e["error"]["message"], "no plugin registered for provider: mock");
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);

    // Malformed nodes are dropped and reported; the rest of the scan lands.
    let head = u(&api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["events"][0]["seq"]);
    d.env = vec![("SVC_MOCK_FAIL".into(), "malformed_nodes".into())];
    d.restart().await;
    let ev = d.wait_scan_after(head).await;
    let r = &ev["payload"];
    let src = &r["sources"][0];
    assert_eq!(src["ok"], true, "{r}");
    assert_eq!(src["rejected"], 3, "{r}");
    let reasons = src["rejections"].to_string();
    for want in ["expected 8 segments", "not valid JSON", "cost NaN"] {
        assert!(reasons.contains(want), "{want} in {reasons}");
    }
    let landed = u(&r["nodes_added"]) + u(&r["nodes_changed"]) + u(&r["nodes_unchanged"]);
    assert_eq!(u(&src["nodes"]), landed, "every well-formed node landed: {r}");
    assert!(landed > 350, "{r}");

    // The plugin crashes mid-scan: its scan fails, nothing is deleted.
    let stats = d.api().get_ok("/api/v1/graph/stats").await;
    d.env = vec![("SVC_MOCK_FAIL".into(), "crash_mid_scan".into())];
    d.restart().await;
    let failed = d.wait_scan_after(u(&ev["seq"])).await;
    let src = &failed["payload"]["sources"][0];
    assert_eq!(src["ok"], false, "{failed}");
    assert!(src["error"].as_str().unwrap().contains("crashed mid-scan"), "{failed}");
    assert_eq!(failed["payload"]["nodes_deleted"], 0);
    let after = d.api().get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        after["active_nodes"], stats["active_nodes"],
        "a failed provider keeps its resources"
    );

    // Its preflight check rejects the credentials: the scan fails with the plugin's words.
    d.env = vec![("SVC_MOCK_FAIL".into(), "preflight_fails".into())];
    d.restart().await;
    let refused = d.wait_scan_after(u(&failed["seq"])).await;
    let src = &refused["payload"]["sources"][0];
    assert_eq!(src["ok"], false, "{refused}");
    assert_eq!(
        src["error"],
        "plugin mock preflight check failed: the access key was rejected (missing: MOCK_ACCESS_KEY)"
    );
    assert_eq!(src["nodes"], 0, "no scan after a failed preflight");
    assert_eq!(refused["payload"]["nodes_deleted"], 0);
}

/// Activation and scan settings follow the configuration while the daemon
/// runs: a plugin turned on replaces the simulated estate the daemon fell
/// back to, for good, and its settings changed through `PUT
/// /api/v1/config` apply from the next scan.
#[tokio::test]
async fn plugins_follow_the_configuration_while_the_daemon_runs() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(
        dir.path(),
        "[daemon]\nscan_interval = \"1h\"\n[plugins.config.mock]\nscale = 400\n",
        300,
    );
    d.launch().await;
    let simulated = json!(["aws", "gcp", "azure", "kubernetes"]);
    let first = d.wait_scan_after(0).await;
    assert_eq!(first["payload"]["sources"][0]["providers"], simulated, "{first}");
    let api = d.api();

    // Turned on: the plugin alone is scanned, with its settings.
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);
    let src = scan_the_plugin(&api).await;
    assert!((350..450).contains(&u(&src["nodes"])), "scale 400: {src}");

    // Its settings changed through the API: used by the next scan.
    api.put_json(
        "/api/v1/config",
        &json!({"plugins": {"config": {"mock": {"scale": 700}}}}),
    )
    .await
    .expect(200);
    let src = scan_one_source(&api).await;
    assert!((650..750).contains(&u(&src["nodes"])), "scale 700: {src}");

    // No plugin active any more: nothing is scanned, and the simulated
    // estate does not come back to retire what the plugin reported.
    api.put_json("/api/v1/config", &json!({"plugins": {"active": []}}))
        .await
        .expect(200);
    let r = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    assert_eq!((&r["sources"], &r["nodes_deleted"]), (&json!([]), &json!(0)), "{r}");
    let plugins = api.get_ok("/api/v1/plugins").await;
    assert_eq!(plugins[0]["active"], false);
    // The plugin turned off was asked to shut down, not killed.
    assert!(
        d.log.wait_for("plugin stopped", Duration::from_secs(20)).await,
        "{}",
        d.log.text()
    );
}

/// A plugin that sends more than `daemon.scan_max_nodes` (or edges) in one
/// scan fails that scan and keeps its resources; the limits follow `PUT
/// /api/v1/config` from the next scan.
#[tokio::test]
async fn a_plugin_past_the_scan_limits_fails_its_scan_and_keeps_its_resources() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(
        dir.path(),
        &(hourly("mock") + "[plugins.config.mock]\nscale = 400\n"),
        300,
    );
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let landed = u(&first["payload"]["sources"][0]["nodes"]);
    assert!(landed > 100, "{first}");
    let api = d.api();

    api.put_json("/api/v1/config", &json!({"daemon": {"scan_max_nodes": 100}}))
        .await
        .expect(200);
    let r = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    let src = &r["sources"][0];
    assert_eq!(
        (&src["ok"], &src["error"]),
        (
            &json!(false),
            &json!("sent more than 100 nodes in one scan (daemon.scan_max_nodes); the scan was stopped there")
        ),
        "{r}"
    );
    assert_eq!(r["nodes_deleted"], 0, "{r}");
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(u(&stats["active_nodes"]), landed, "{stats}");

    // Edges likewise.
    api.put_json(
        "/api/v1/config",
        &json!({"daemon": {"scan_max_nodes": 1_000_000, "scan_max_edges": 10}}),
    )
    .await
    .expect(200);
    let src = scan_one_source(&api).await;
    assert_eq!(
        src["error"], "sent more than 10 edges in one scan (daemon.scan_max_edges); the scan was stopped there",
        "{src}"
    );

    // Not a positive integer: refused, and nothing changes.
    for bad in [json!(0), json!(-5), json!("many")] {
        api.put_json("/api/v1/config", &json!({"daemon": {"scan_max_edges": bad}}))
            .await
            .expect_error(422, "invalid");
    }
    api.put_json("/api/v1/config", &json!({"daemon": {"scan_max_edges": 1_000_000}}))
        .await
        .expect(200);
    scan_the_plugin(&api).await;
}

/// Turning a plugin off, or changing the configuration, while a scan runs
/// answers at once and applies from the next scan, instead of waiting for
/// the running scan (which may take minutes on a large estate) to end.
#[tokio::test]
async fn the_plugins_change_while_a_scan_runs_without_waiting_for_it() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(dir.path(), "[daemon]\nscan_interval = \"1h\"\n", 300);
    d.env = vec![("SVC_MOCK_FAIL".into(), "hang".into())];
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let api = d.api();
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);

    // The plugin hangs: this scan runs until its timeout. Once the plugin
    // has the Scan call, the scan holds the sources.
    api.post_json("/api/v1/engine/scan", &json!({"timeout": "10s"}))
        .await
        .expect(202);
    assert!(
        d.log.wait_for("scan hangs as asked", Duration::from_secs(20)).await,
        "{}",
        d.log.text()
    );
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);
    api.put_json("/api/v1/config", &json!({"daemon": {"scan_max_nodes": 1000}}))
        .await
        .expect(200);
    api.post_json("/api/v1/engine/scan", &json!({}))
        .await
        .expect_error(409, "conflict");
    assert_eq!(api.get_ok("/api/v1/plugins").await[0]["active"], false);

    let hung = d.wait_scan_after(u(&first["seq"])).await;
    assert_eq!(
        hung["payload"]["sources"][0]["error"], "scan timed out after 10s",
        "{hung}"
    );
    // The next scan has the plugin off.
    let r = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    assert_eq!(r["sources"], json!([]), "{r}");
}

/// Turning one plugin on or off leaves the others running: their
/// processes are the same before and after.
#[tokio::test]
async fn toggling_one_plugin_leaves_the_others_running() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    install_as(dir.path(), "acme");
    let mut d = daemon(dir.path(), &hourly("mock"), 300);
    d.launch().await;
    d.wait_scan_after(0).await;
    let mock = dir.path().join("plugins/svc-plugin-mock");
    let before = running(&mock);
    assert_eq!(before.len(), 1, "the mock plugin runs between scans");

    let api = d.api();
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "acme"}))
        .await
        .expect(200);
    let r = api
        .post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect(200);
    let names: Vec<&str> = r["sources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["acme", "mock"], "{r}");
    assert_eq!(running(&mock), before, "mock was not restarted");
    let acme = dir.path().join("plugins/svc-plugin-acme");
    assert_eq!(running(&acme).len(), 1);

    api.post_json("/api/v1/plugins/toggle", &json!({"name": "acme"}))
        .await
        .expect(200);
    assert!(
        d.log.wait_for("plugin stopped", Duration::from_secs(20)).await,
        "{}",
        d.log.text()
    );
    assert_eq!(running(&acme), Vec::<u32>::new(), "acme, turned off, stopped");
    assert_eq!(running(&mock), before);
}

/// A plugin installed while the daemon runs is listed, can be turned on,
/// and is scanned from the next scan, without a restart.
#[tokio::test]
async fn a_plugin_installed_while_the_daemon_runs_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), "[daemon]\nscan_interval = \"1h\"\n", 300);
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    assert_eq!(api.get_ok("/api/v1/plugins").await, json!([]));

    install(dir.path());
    let plugins = api.get_ok("/api/v1/plugins").await;
    assert_eq!(
        (&plugins[0]["name"], &plugins[0]["active"]),
        (&json!("mock"), &json!(false)),
        "{plugins}"
    );
    assert_eq!(plugins[0]["status"], "verified");
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);
    scan_the_plugin(&api).await;
}

/// A plugin named in `plugins.active` before it is installed is scanned by
/// the first scan after `svc plugins install-local`, nothing else needed.
#[tokio::test]
async fn a_plugin_named_active_before_it_is_installed_is_scanned_once_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), &hourly("mock"), 300);
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    assert_eq!(first["payload"]["sources"], json!([]), "not installed yet: {first}");

    install(dir.path());
    scan_the_plugin(&d.api()).await;
}

/// A daemon restarted without credentials and with its plugins turned off
/// does not fall back to the simulated estate over a graph that a plugin
/// (other than the mock one) filled: the simulated providers carry the same
/// names and would retire everything it reported.
#[tokio::test]
async fn a_graph_a_plugin_filled_is_not_handed_to_the_simulated_estate() {
    let dir = tempfile::tempdir().unwrap();
    install_as(dir.path(), "acme");
    let mut d = daemon(dir.path(), &hourly("acme"), 300);
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    assert_eq!(first["payload"]["sources"][0]["name"], "acme", "{first}");
    let before = d.api().get_ok("/api/v1/graph/stats").await;
    d.api()
        .post_json("/api/v1/plugins/toggle", &json!({"name": "acme"}))
        .await
        .expect(200);

    d.restart().await;
    let after_restart = d.wait_scan_after(u(&first["seq"])).await;
    let p = &after_restart["payload"];
    assert_eq!((&p["sources"], &p["nodes_deleted"]), (&json!([]), &json!(0)), "{p}");
    let after = d.api().get_ok("/api/v1/graph/stats").await;
    assert_eq!(after["active_nodes"], before["active_nodes"]);
    let log = d.log.text();
    assert!(log.contains("not falling back to a simulated estate"), "{log}");

    // Which sources filled the graph cannot be read (the graph store's
    // table of them is unusable): a graph with rows is still not handed over.
    let status = d.stop().await;
    assert!(status.success(), "{status}");
    {
        let db = redb::Database::open(dir.path().join("graph.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.delete_table(redb::TableDefinition::<&str, &str>::new("source_providers"))
            .unwrap();
        let wrong: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("source_providers");
        txn.open_table(wrong).unwrap().insert(1, 1).unwrap();
        txn.commit().unwrap();
    }
    d.launch().await;
    let again = d.wait_scan_after(u(&after_restart["seq"])).await;
    let p = &again["payload"];
    assert_eq!((&p["sources"], &p["nodes_deleted"]), (&json!([]), &json!(0)), "{p}");
    let log = d.log.text();
    assert!(log.contains("unknown (their record cannot be read)"), "{log}");
}

/// A binary whose hash no longer matches its manifest is never started: it
/// is listed with the reason, and each scan of it fails with that reason in
/// the `SCAN_COMPLETED` payload and the API. The resources it reported
/// before stay; the simulated estate does not take its place.
#[tokio::test]
async fn a_tampered_plugin_fails_its_own_scans_and_keeps_its_resources() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(
        dir.path(),
        &(hourly("mock") + "[plugins.config.mock]\nscale = 400\n"),
        300,
    );
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    assert_eq!(first["payload"]["sources"][0]["ok"], true, "{first}");
    let before = d.api().get_ok("/api/v1/graph/stats").await;
    assert!(u(&before["active_nodes"]) > 350, "{before}");

    // One byte appended while the daemon is down: the hash no longer
    // matches the manifest.
    d.stop().await;
    let bin = dir.path().join("plugins/svc-plugin-mock");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes.push(0);
    std::fs::write(&bin, bytes).unwrap();
    d.restart().await;
    let plugins = d.api().get_ok("/api/v1/plugins").await;
    let status = plugins[0]["status"].as_str().unwrap();
    assert!(status.contains("failed verification"), "{status}");

    let failed = d.wait_scan_after(u(&first["seq"])).await;
    let p = &failed["payload"];
    assert_eq!(
        p["sources"].as_array().unwrap().len(),
        1,
        "no simulated estate beside it: {p}"
    );
    let src = &p["sources"][0];
    assert_eq!((&src["name"], &src["ok"]), (&json!("mock"), &json!(false)), "{p}");
    let error = src["error"].as_str().unwrap();
    assert!(
        error.contains("failed verification") && error.contains("does not match manifest"),
        "{error}"
    );
    assert_eq!(p["nodes_deleted"], 0, "{p}");
    let after = d.api().get_ok("/api/v1/graph/stats").await;
    assert_eq!(after["active_nodes"], before["active_nodes"], "its resources are kept");

    // A scan of its provider through the API answers the same reason.
    let r = d
        .api()
        .post_json("/api/v1/engine/scan", &json!({"provider": "mock", "wait": true}))
        .await
        .expect(200);
    assert_eq!(r["sources"][0]["error"], src["error"], "{r}");
    let log = d.log.text();
    assert!(
        !log.contains("no cloud credentials and no active plugins found"),
        "{log}"
    );
    assert_eq!(
        log.matches("plugin started").count(),
        1,
        "only the first run started it: {log}"
    );

    // Installed again while the daemon runs: listed as verified, and
    // scanned from the next scan on.
    install(dir.path());
    let plugins = d.api().get_ok("/api/v1/plugins").await;
    assert_eq!(plugins[0]["status"], "verified", "{plugins}");
    let r = d
        .api()
        .post_json("/api/v1/engine/scan", &json!({"provider": "mock", "wait": true}))
        .await
        .expect(200);
    assert_eq!(r["sources"][0]["ok"], true, "{r}");
}

/// A plugin that hangs is cancelled at `daemon.scan_timeout`, and `svc scan
/// --timeout` sets the limit for one scan.
#[tokio::test]
async fn a_hanging_plugin_is_cancelled_at_the_scan_timeout() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(
        dir.path(),
        "[daemon]\nscan_interval = \"1h\"\nscan_timeout = \"3s\"\n[plugins]\nactive = [\"mock\"]\n",
        300,
    );
    d.env = vec![("SVC_MOCK_FAIL".into(), "hang".into())];
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let src = &first["payload"]["sources"][0];
    assert_eq!(src["ok"], false, "{first}");
    assert_eq!(src["error"], "scan timed out after 3s", "{first}");

    let out = Command::new(SVC)
        .args(["scan", "--timeout", "1s", "--json"])
        .env("SVC_URL", d.base())
        .env("SVC_DATA_DIR", dir.path())
        .output()
        .expect("run svc scan");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["sources"][0]["error"], "scan timed out after 1s", "{report}");
    let bad = Command::new(SVC)
        .args(["scan", "--timeout", "soon"])
        .env("SVC_URL", d.base())
        .env("SVC_DATA_DIR", dir.path())
        .output()
        .expect("run svc scan");
    // A usage error: the duration does not read.
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid duration \"soon\""));

    // The configured timeout follows `PUT /api/v1/config` from the next scan.
    let api = d.api();
    api.put_json("/api/v1/config", &json!({"daemon": {"scan_timeout": "2s"}}))
        .await
        .expect(200);
    let src = scan_one_source(&api).await;
    assert_eq!(src["error"], "scan timed out after 2s", "{src}");
}

/// Remediation goes through the plugin's `CheckReversibility`, `Remediate`
/// and `ApplyQuarantine`: a pending item is proved by the plugin, approved
/// and applied, and a quarantine is reverted by its hash.
#[tokio::test]
async fn remediation_runs_through_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(
        dir.path(),
        &(hourly("mock") + "[plugins.config.mock]\nscale = 300\n"),
        300,
    );
    d.launch().await;
    d.wait_scan_after(0).await;
    let api = d.api();
    let q = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", "pending"), ("limit", "1000")])
        .await;
    let items = q["stages"]["pending"].as_array().unwrap().clone();
    assert!(!items.is_empty(), "{q}");
    assert!(
        items.iter().all(|i| i["proof"]["source"] == "plugin"),
        "the plugin proved every item: {:?}",
        items.first()
    );
    let item = items
        .iter()
        .find(|i| i["type"] == "ec2:volume")
        .unwrap_or(&items[0])
        .clone();
    let crn = item["crn"].as_str().unwrap();
    let done = api
        .post_json(
            "/api/v1/remediation/approve",
            &json!({"crn": crn, "plan_hash": item["plan_hash"], "actor": "ops"}),
        )
        .await
        .expect(200);
    assert_eq!(done["applied"], true, "{done}");
    let commits: Vec<Value> = api
        .history_all(&[("type", "EXECUTION_COMMIT")])
        .await
        .into_iter()
        .filter(|e| e["crn"] == crn)
        .collect();
    assert!(!commits.is_empty());
    assert!(
        d.log.text().contains("remediation applied"),
        "the plugin logged the action"
    );

    let other = items.iter().find(|i| i["crn"] != crn).unwrap()["crn"]
        .as_str()
        .unwrap()
        .to_owned();
    let q = api
        .post_json(
            "/api/v1/remediation/quarantine",
            &json!({"crn": other, "action": "ISOLATE", "reason": "test"}),
        )
        .await
        .expect(200);
    api.post_json(
        "/api/v1/remediation/revert",
        &json!({"hash": q["compensating_payload_hash"]}),
    )
    .await
    .expect(200);
    let reverted = api.history_all(&[("type", "QUARANTINE_REVERTED")]).await;
    assert_eq!(reverted.len(), 1);
}

/// While a scan runs, `GET /api/v1/engine/scan/progress` names its phase
/// and its sources; once it ends, how it ended.
#[tokio::test]
async fn a_running_scan_reports_its_phase_and_its_sources() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    let mut d = daemon(dir.path(), "[daemon]\nscan_interval = \"1h\"\n", 300);
    // Once turned on, the plugin takes the Scan call and never answers it.
    d.env = vec![("SVC_MOCK_FAIL".into(), "hang".into())];
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let api = d.api();
    let idle = api.get_ok("/api/v1/engine/scan/progress").await;
    assert_eq!(
        (
            &idle["scanning"],
            &idle["phase"],
            &idle["phase_index"],
            &idle["phase_count"]
        ),
        (&json!(false), &Value::Null, &json!(0), &json!(10)),
        "{idle}"
    );
    assert_eq!(idle["last_scan"]["scan_seq"], first["payload"]["scan_seq"], "{idle}");
    assert_eq!(idle["last_scan"]["ok"], true, "{idle}");
    api.post_json("/api/v1/plugins/toggle", &json!({"name": "mock"}))
        .await
        .expect(200);

    let started = api
        .post_json("/api/v1/engine/scan", &json!({"timeout": "10s"}))
        .await
        .expect(202);
    assert!(
        d.log.wait_for("scan hangs as asked", Duration::from_secs(20)).await,
        "{}",
        d.log.text()
    );
    let running = api.get_ok("/api/v1/engine/scan/progress").await;
    assert_eq!(
        (&running["scanning"], &running["phase"], &running["phase_index"]),
        (&json!(true), &json!("engine.plugin_scan"), &json!(3)),
        "{running}"
    );
    assert_eq!(running["scan_seq"], started["scan_seq"], "{running}");
    let names: Vec<&str> = running["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mock"), "{running}");
    let mock = running["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "mock")
        .unwrap();
    assert_eq!(
        (&mock["state"], &mock["nodes"]),
        (&json!("scanning"), &json!(0)),
        "{running}"
    );

    // It times out: the source failed, the scan itself committed.
    let done = d.wait_scan_after(first["seq"].as_u64().unwrap()).await;
    let p = api.get_ok("/api/v1/engine/scan/progress").await;
    assert_eq!((&p["scanning"], &p["sources"]), (&json!(false), &json!([])), "{p}");
    let last = &p["last_scan"];
    assert_eq!(last["scan_seq"], started["scan_seq"], "{p}");
    assert_eq!((&last["ok"], &last["error"]), (&json!(true), &Value::Null), "{p}");
    assert_eq!(last["node_count"], done["payload"]["node_count"], "{p}");
}

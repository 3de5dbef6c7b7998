//! Interoperability: a provider plugin written in Python with grpcio (from
//! SPEC.md alone, `tests/interop/svc_plugin_py.py`) serving over TCP is
//! installed, launched, handshaken and scanned by the daemon.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Daemon, SVC, Sources};
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python plugin behind an executable wrapper named like a plugin.
fn python_plugin(dir: &Path) -> PathBuf {
    let check = Command::new("python3").args(["-c", "import grpc, grpc_tools"]).output();
    let ok = check.as_ref().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python3 with grpcio is needed: run the suite with scripts/test, which installs grpcio into .venv"
    );
    let wrapper = dir.join("svc-plugin-pyco");
    let script = format!(
        "#!/bin/sh\nSVC_PY_PROTO_ROOT='{}' exec python3 '{}'\n",
        repo().join("proto/proto").display(),
        repo().join("tests/interop/svc_plugin_py.py").display()
    );
    std::fs::write(&wrapper, script).unwrap();
    wrapper
}

/// Installs `bin` as plugin `name` with `[plugins.config.<name>] region`,
/// starts a daemon (no `--mock`, no credentials) and waits for its first scan.
async fn scanned_through(bin: &Path, name: &str, region: &str) -> (tempfile::TempDir, Daemon, Value) {
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(SVC)
        .args(["plugins", "install-local"])
        .arg(bin)
        .env("SVC_DATA_DIR", data.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config = format!(
        "[daemon]\nscan_interval = \"1h\"\n[plugins]\nactive = [\"{name}\"]\n[plugins.config.{name}]\nregion = \"{region}\"\n"
    );
    std::fs::write(data.path().join("config.toml"), config).unwrap();
    let mut d = Daemon::configure(data.path(), 300);
    d.sources = Sources::Fallback;
    d.launch().await;
    let scan = d.wait_scan_after(0).await;
    assert_eq!(scan["payload"]["sources"][0]["name"], name, "{scan}");
    assert_eq!(scan["payload"]["sources"][0]["ok"], true, "{scan}");
    (data, d, scan)
}

#[tokio::test]
async fn a_python_grpcio_plugin_over_tcp_is_scanned() {
    let build = tempfile::tempdir().unwrap();
    let wrapper = python_plugin(build.path());
    let (_data, d, scan) = scanned_through(&wrapper, "pyco", "eu-1").await;
    let p = &scan["payload"];
    assert_eq!(
        (&p["node_count"], &p["edge_count"]),
        (&Value::from(3), &Value::from(2)),
        "{scan}"
    );

    // The plugin form became the graph form; properties kept their types.
    let api = d.api();
    let node = api
        .get_ok("/api/v1/graph/nodes/crn:svc:pyco:eu-1:bucket:bucket:acct-1:backups")
        .await;
    assert_eq!(node["properties"]["size_gib"], 900);
    assert_eq!(node["properties"]["versioning"], true);
    assert_eq!(node["cost_usd_mo"], 20.7);
    let edges = api
        .get_ok("/api/v1/graph/nodes/crn:svc:pyco:eu-1:function:function:acct-1:resize/edges")
        .await;
    let rels: Vec<&str> = edges["outgoing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(rels, vec!["Uses", "Uses"], "READS and WRITES map to Uses");
    let log = d.log.text();
    assert!(log.contains("net=tcp"), "the plugin was reached over TCP:\n{log}");
    assert!(
        log.contains(r#"\"region\":\"eu-1\""#),
        "its scan config reached it:\n{log}"
    );
}

/// A provider plugin built with HashiCorp go-plugin (Debian's packages,
/// built offline by `tests/interop/go/build.sh`) is launched through its own
/// `plugin.Serve`, handshaken over its Unix socket and scanned.
#[tokio::test]
async fn a_go_plugin_provider_is_scanned() {
    let build = tempfile::tempdir().unwrap();
    let bin = build.path().join("svc-plugin-goco");
    let out = Command::new(repo().join("tests/interop/go/build.sh"))
        .arg(&bin)
        .output();
    let out = out.unwrap_or_else(|e| panic!("run tests/interop/go/build.sh: {e}"));
    assert!(
        out.status.success(),
        "building the go-plugin provider failed (scripts/test installs Go, go-plugin and the protobuf \
         generators from Debian's packages):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_data, d, scan) = scanned_through(&bin, "goco", "eu-9").await;
    let p = &scan["payload"];
    assert_eq!(
        (&p["node_count"], &p["edge_count"]),
        (&Value::from(2), &Value::from(1)),
        "{scan}"
    );
    // The scan config reached the plugin: its CRNs carry the configured region.
    let node = d
        .api()
        .get_ok("/api/v1/graph/nodes/crn:svc:goco:eu-9:disk:disk:acct-9:web-1-root")
        .await;
    assert_eq!(node["properties"]["size_gib"], 64);
    let edges = d
        .api()
        .get_ok("/api/v1/graph/nodes/crn:svc:goco:eu-9:vm:vm:acct-9:web-1/edges")
        .await;
    assert_eq!(edges["incoming"][0]["type"], "AttachedTo");
    assert!(
        d.log.text().contains("net=unix"),
        "go-plugin serves on a Unix socket:\n{}",
        d.log.text()
    );
}

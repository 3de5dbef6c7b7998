//! A real heuristic plugin through the daemon: `svc plugins install-local
//! --role heuristic` installs `svc-plugin-unattached-volumes`,
//! `plugins.active` turns it on, and each scan of the mock estate feeds it
//! over the go-plugin protocol (`SVC_HEURISTIC_PLUGIN=svc-heuristic`,
//! Metadata, the bidirectional Analyze stream). Its findings become the
//! nodes' verdicts; what it was sent is checked from the annotations it
//! returns; a finding about a resource it was not sent is discarded, a risk
//! above 79 is capped, and a crash or a hang fails only the plugin.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use common::{Daemon, SVC, Sources, running};
use serde_json::{Value, json};

const PLUGIN: &str = "svc-plugin-unattached-volumes";
const FOREIGN: &str = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-never-sent";

fn install(dir: &std::path::Path) {
    let path = PathBuf::from(SVC).with_file_name(PLUGIN);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace`",
        path.display()
    );
    let out = Command::new(SVC)
        .args(["plugins", "install-local", "--role", "heuristic"])
        .arg(&path)
        .env("SVC_DATA_DIR", dir)
        .output()
        .expect("run svc plugins install-local");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = std::fs::read_to_string(dir.join(format!("plugins/{PLUGIN}.yaml"))).expect("manifest");
    assert!(manifest.contains("role: heuristic"), "{manifest}");
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// The CRNs the plugin should flag, read from the nodes' own properties.
fn unattached(nodes: &[Value]) -> BTreeSet<String> {
    nodes
        .iter()
        .filter(|n| {
            let p = &n["properties"];
            let volume = n["type"] == "ec2:volume" || n["kind"] == "disk";
            volume
                && (p["attachment_state"] == "detached"
                    || p["attachment_state"] == "Unattached"
                    || p["users"] == json!([]))
        })
        .map(|n| n["crn"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_heuristic_plugin_flags_waste_and_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path());
    std::fs::write(
        dir.path().join("config.toml"),
        // Built-in rules off: the plugin is the only judge here.
        "[daemon]\nscan_interval = \"1h\"\n[plugins]\nactive = [\"unattached-volumes\"]\n[heuristics]\nbuiltin = false\n",
    )
    .unwrap();
    let mut d = Daemon::configure(dir.path(), 400);
    d.sources = Sources::Mock;
    d.env = vec![
        ("SVC_HEURISTIC_BATCH".into(), "7".into()),
        ("SVC_HEURISTIC_RISK".into(), "95".into()),
        ("SVC_HEURISTIC_EXTRA_CRN".into(), FOREIGN.into()),
    ];
    d.launch().await;
    let first = d.wait_scan_after(0).await;
    let p = &first["payload"];
    let h = &p["heuristics"][0];
    assert_eq!(h["name"], "unattached-volumes", "{p}");
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(h["rule"], "unattached-volume");
    let sent = u(&h["nodes_sent"]);
    assert!(sent > 0, "{h}");
    assert!(u(&h["batches_sent"]) >= sent.div_ceil(7), "batches of at most 7: {h}");
    assert_eq!(h["discarded"], 1, "the CRN never sent: {h}");
    assert!(
        h["discard_reasons"][0]
            .as_str()
            .unwrap_or_default()
            .contains("vol-never-sent"),
        "{h}"
    );
    assert_eq!(h["capped"], h["findings"], "every risk of 95 capped: {h}");
    assert_eq!(p["builtin"]["rules"], 0, "built-in rules are switched off: {p}");

    let api = d.api();
    let page = api.get_query_ok("/api/v1/graph/nodes", &[("limit", "1000")]).await;
    let nodes = page["nodes"].as_array().expect("nodes").clone();
    assert_eq!(page["next_cursor"], "", "one page holds the estate");
    let want = unattached(&nodes);
    assert!(!want.is_empty(), "the mock estate plants unattached volumes");
    let flagged: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n["is_waste"] == true)
        .map(|n| n["crn"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(flagged, want, "exactly the unattached volumes and disks are waste");
    assert_eq!(u(&p["waste_count"]), want.len() as u64);
    assert_eq!(u(&h["waste"]), want.len() as u64);
    let sent_types: u64 = nodes
        .iter()
        .filter(|n| n["type"] == "ec2:volume" || n["kind"] == "disk")
        .count() as u64;
    assert_eq!(sent, sent_types, "only volumes and disks are sent");

    let crn = want.first().expect("one flagged");
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(crn)))
        .await;
    assert_eq!(node["verdict"], "unattached-volume");
    assert_eq!(node["findings"][0]["risk_score"], 79, "plugin risk is capped at 79");
    let reason = node["waste_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("GiB") && reason.contains("/mo"), "{reason}");

    // What the plugin received, from its annotations: declared keys only, batches of at most 7.
    let declared: BTreeSet<&str> = [
        "attachment_state",
        "users",
        "size_gib",
        "volume_type",
        "disk_type",
        "sku",
        "last_attached_at",
        "last_detached_at",
    ]
    .into();
    let topology = api.get_ok("/api/v1/topology").await;
    let flagged_topology: Vec<&Value> = topology["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["heuristics_flagged"].as_array().is_some_and(|a| !a.is_empty()))
        .collect();
    assert_eq!(flagged_topology.len(), want.len());
    for n in &flagged_topology {
        assert_eq!(
            n["heuristics_flagged"],
            json!([{"rule_name": "unattached-volume", "severity": 4}]),
            "{n}"
        );
    }
    // What the plugin received, from the annotations it sent back.
    for crn in &want {
        let node = api
            .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(crn)))
            .await;
        let f = &node["findings"][0];
        assert_eq!(f["source"], "plugin:unattached-volumes", "{node}");
        assert_eq!(f["suggested_action"], "snapshot_delete");
        assert_eq!(f["risk_score"], 79);
        let received: BTreeSet<&str> = f["annotations"]["properties"]
            .as_str()
            .unwrap_or_default()
            .split(',')
            .filter(|k| !k.is_empty())
            .collect();
        assert!(!received.is_empty() && received.is_subset(&declared), "{received:?}");
        let all: BTreeSet<&str> = node["properties"]
            .as_object()
            .expect("props")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            received,
            &all & &declared,
            "every declared key the node has, nothing else"
        );
        let batch: u64 = f["annotations"]["batch_nodes"]
            .as_str()
            .unwrap_or_default()
            .parse()
            .expect("batch size");
        assert!((1..=7).contains(&batch), "batch of {batch}");
    }

    // A stopping daemon stops its plugins: none outlives it.
    let installed = dir.path().join("plugins").join(PLUGIN);
    assert_eq!(running(&installed).len(), 1, "the plugin runs between scans");
    let status = d.stop().await;
    assert!(status.success(), "{status}");
    assert_eq!(running(&installed), Vec::<u32>::new(), "plugin processes left behind");
    assert!(d.log.text().contains("plugin stopped"), "{}", d.log.text());

    // The plugin crashes: its scan fails, the scan lands, its verdicts stay.
    let head = u(&first["seq"]);
    d.env = vec![("SVC_HEURISTIC_FAIL".into(), "crash".into())];
    d.launch().await;
    let ev = d.wait_scan_after(head).await;
    let p = &ev["payload"];
    let h = &p["heuristics"][0];
    assert_eq!(h["ok"], false, "{h}");
    let error = h["error"].as_str().unwrap_or_default();
    assert!(error.contains("crashed during Analyze"), "{error}");
    assert!(u(&p["node_count"]) > 350, "the provider's scan landed: {p}");
    let after = api_flagged(&d).await;
    assert_eq!(
        after, want,
        "verdicts are kept in the graph across a restart and a failed plugin"
    );

    // The plugin hangs: the scan timeout (daemon.scan_timeout) cuts it off, the scan completes.
    let head = u(&ev["seq"]);
    std::fs::write(
        dir.path().join("config.toml"),
        "[daemon]\nscan_interval = \"1h\"\nscan_timeout = \"3s\"\n[plugins]\nactive = [\"unattached-volumes\"]\n[heuristics]\nbuiltin = false\n",
    )
    .unwrap();
    d.env = vec![("SVC_HEURISTIC_FAIL".into(), "hang".into())];
    d.restart().await;
    let ev = d.wait_scan_after(head).await;
    let h = &ev["payload"]["heuristics"][0];
    assert_eq!(h["ok"], false, "{h}");
    assert_eq!(h["error"], "scan timed out after 3s", "{h}");
    assert_eq!(api_flagged(&d).await, want);

    // The plugin answers without end: it is stopped past the findings it
    // may send (well before the timeout) and killed; its verdicts stay.
    let head = u(&ev["seq"]);
    std::fs::write(
        dir.path().join("config.toml"),
        "[daemon]\nscan_interval = \"1h\"\n[plugins]\nactive = [\"unattached-volumes\"]\n[heuristics]\nbuiltin = false\n",
    )
    .unwrap();
    d.env = vec![("SVC_HEURISTIC_FAIL".into(), "flood".into())];
    d.restart().await;
    let ev = d.wait_scan_after(head).await;
    let h = &ev["payload"]["heuristics"][0];
    assert_eq!(h["ok"], false, "{h}");
    let error = h["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("sent more than ") && error.ends_with("(at most 4 a resource); the pass was stopped there"),
        "{error}"
    );
    assert_eq!(api_flagged(&d).await, want);
    assert_eq!(running(&installed), Vec::<u32>::new(), "the flooding plugin was killed");
}

async fn api_flagged(d: &Daemon) -> BTreeSet<String> {
    let page = d.api().get_query_ok("/api/v1/graph/nodes", &[("limit", "1000")]).await;
    page["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["is_waste"] == true)
        .map(|n| n["crn"].as_str().unwrap_or_default().to_owned())
        .collect()
}

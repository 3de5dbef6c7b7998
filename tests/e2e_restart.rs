//! Persistence across daemon restarts: a clean stop, a SIGKILL in the middle
//! of a scan, and store files that are not stores.
//!
//! The daemon scans once at start. To look at the restored graph without a
//! scan changing it, a restart first runs with credentials but no active
//! provider plugin (`Sources::None`): its scans find nothing and delete
//! nothing. A further restart on the mock estate then proves scanning goes on.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Api, Daemon, Sources};
use redb::{ReadableDatabase, ReadableTable};
use serde_json::{Value, json};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// Nodes in CRN order (the listing order is the daemon's internal one).
fn by_crn(mut nodes: Vec<Value>) -> Vec<Value> {
    nodes.sort_by(|a, b| a["crn"].as_str().cmp(&b["crn"].as_str()));
    nodes
}

/// What a restart must keep.
struct Snapshot {
    stats: Value,
    checksum: Value,
    history: Vec<Value>,
    verify: Value,
}

async fn snapshot(api: &Api) -> Snapshot {
    let verify = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(verify["ok"], true, "ledger verifies: {verify}");
    Snapshot {
        stats: api.get_ok("/api/v1/graph/stats").await,
        checksum: api.get_ok("/api/v1/topology").await["checksum_sha256"].clone(),
        history: api.history_all(&[]).await,
        verify,
    }
}

/// The newest SCAN_COMPLETED event of a newest-first history.
fn last_scan(history: &[Value]) -> &Value {
    history
        .iter()
        .find(|e| e["type"] == "SCAN_COMPLETED")
        .expect("a SCAN_COMPLETED event")
}

/// Checks that the restored graph and ledger equal `before`, and that the
/// only events since are the scans of the restarted daemon.
async fn assert_restored(d: &Daemon, before: &Snapshot) {
    let api = d.api();
    let stats = api.get_ok("/api/v1/graph/stats").await;
    // A start drops the retired rows from memory (graph.redb keeps them):
    // the same graph, less its logically deleted nodes.
    let mut want = before.stats.clone();
    want["total_nodes"] = want["active_nodes"].clone();
    want["logically_deleted"] = 0.into();
    // The same sources, as they were; how each did in the last scan is
    // that of the restarted daemon's scans (which run none of them).
    let mut stats = stats;
    for s in [&mut want, &mut stats] {
        for source in s["sources"].as_array_mut().into_iter().flatten() {
            source.as_object_mut().map(|o| o.remove("last_scan"));
        }
    }
    assert_eq!(stats, want, "graph/stats after the restart");
    let last = last_scan(&before.history);
    assert_eq!(
        stats["active_nodes"], last["meta"]["node_count"],
        "the graph is the one of the last completed scan"
    );
    assert_eq!(stats["total_edges"], last["meta"]["edge_count"]);
    let topo = api.get_ok("/api/v1/topology").await;
    assert_eq!(topo["checksum_sha256"], before.checksum, "the same nodes and edges");

    // The store agrees with the live graph.
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let at = api
        .get_query_ok("/api/v1/graph/at", &[("ts", &now), ("limit", "1")])
        .await;
    assert_eq!(
        at["total_nodes"], stats["active_nodes"],
        "graph/at now counts the live nodes"
    );

    let history = api.history_all(&[]).await;
    let added = history.len() - before.history.len();
    assert_eq!(
        &history[added..],
        &before.history[..],
        "every event from before the restart, unchanged"
    );
    for e in &history[..added] {
        assert_eq!(
            e["type"], "SCAN_COMPLETED",
            "only the restarted daemon's scans are new: {e}"
        );
        assert_ne!(e["session_id"], before.history[0]["session_id"], "a new session: {e}");
    }
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true, "ledger verifies after the restart: {v}");
    assert_eq!(
        u(&v["last_seq"]),
        u(&before.verify["last_seq"]) + added as u64,
        "gap-free seqs: {v}"
    );
}

/// Waits for the scan the restarted daemon runs at start (the first event
/// after `head`) and checks it continues the numbering.
async fn expect_next_scan(d: &Daemon, head: u64, last_scan_seq: u64) -> Value {
    let ev = d.wait_scan_after(head).await;
    assert_eq!(u(&ev["seq"]), head + 1, "the next ledger seq, no gap: {ev}");
    assert_eq!(
        u(&ev["payload"]["scan_seq"]),
        last_scan_seq + 1,
        "the next scan_seq: {ev}"
    );
    ev
}

#[tokio::test]
async fn a_clean_restart_keeps_graph_history_and_ledger() {
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), 800).await;
    let api = d.api();
    api.scan_wait().await;
    let report = api.scan_wait().await;
    let before = snapshot(&api).await;
    assert_eq!(u(&report["scan_seq"]), 3);
    let nodes = by_crn(api.all_nodes(None).await);
    let sample: Vec<&Value> = nodes.iter().step_by(nodes.len() / 25 + 1).collect();
    let head = u(&before.verify["last_seq"]);
    drop(api);

    let status = d.stop().await;
    assert!(
        status.success(),
        "the daemon exits 0 on SIGTERM: {status}\n{}",
        d.log.text()
    );

    d.sources = Sources::None;
    d.restart().await;
    let api = d.api();
    assert_eq!(
        by_crn(api.all_nodes(None).await),
        nodes,
        "every node object, field by field"
    );
    for n in &sample {
        let crn = n["crn"].as_str().expect("crn");
        let got = api
            .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(crn)))
            .await;
        for (k, v) in n.as_object().expect("node") {
            assert_eq!(&got[k], v, "field {k} of {crn}");
        }
    }
    let ev = expect_next_scan(&d, head, 3).await;
    assert_eq!(
        ev["payload"]["node_count"], before.stats["active_nodes"],
        "a scan that finds nothing keeps every node"
    );
    assert_restored(&d, &before).await;
    let sessions = api.get_ok("/api/v1/history/sessions").await;
    assert_eq!(
        sessions["sessions"].as_array().map(Vec::len),
        Some(2),
        "two daemon runs: {sessions}"
    );

    // Back on the mock estate, scans go on where they stopped.
    drop(api);
    d.sources = Sources::Mock;
    d.restart().await;
    let ev = expect_next_scan(&d, head + 1, 4).await;
    let api = d.api();
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(stats["active_nodes"], ev["payload"]["node_count"]);
    let r = api.scan_wait().await;
    assert_eq!(u(&r["scan_seq"]), 6);
    assert_eq!(u(&r["event_seq"]), head + 3);
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(u(&v["events"]), head + 3);
}

#[tokio::test]
async fn sigkill_during_a_scan_loses_nothing_that_was_committed() {
    const SCALE: usize = 30_000;
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let before = snapshot(&api).await;
    let last_scan_seq = u(&last_scan(&before.history)["meta"]["scan_seq"]);
    let head = u(&before.verify["last_seq"]);

    let started = api.scan_start().await;
    let killed_scan = u(&started["scan_seq"]);
    assert_eq!(killed_scan, last_scan_seq + 1);
    let second = api.post_json("/api/v1/engine/scan", &json!({"wait": false})).await;
    assert_ne!(
        second.status, 202,
        "the scan finished before the second trigger: raise SCALE ({SCALE})"
    );
    second.expect_error(409, "conflict");
    let status = d.kill_9().await;
    assert!(!status.success(), "SIGKILL ends the daemon: {status}");
    drop(api);

    d.sources = Sources::None;
    d.restart().await;
    let api = d.api();
    let history = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    assert!(
        history
            .iter()
            .all(|e| u(&e["meta"]["scan_seq"]) != killed_scan || e["session_id"] != before.history[0]["session_id"]),
        "the killed scan had completed before the kill, so the kill did not land mid-scan: raise SCALE ({SCALE})"
    );
    let ev = expect_next_scan(&d, head, last_scan_seq).await;
    assert_eq!(ev["payload"]["node_count"], before.stats["active_nodes"]);
    assert_restored(&d, &before).await;

    // On the mock estate again, a new scan works.
    drop(api);
    d.sources = Sources::Mock;
    d.restart().await;
    let ev = expect_next_scan(&d, head + 1, last_scan_seq + 1).await;
    let api = d.api();
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        stats["active_nodes"], ev["payload"]["node_count"],
        "the new scan's graph is live"
    );
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(u(&v["last_seq"]), head + 2);
}

/// Bytes that are no store: deterministic noise.
fn garbage(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn assert_refuses_corrupt(data_dir: &Path, file: &str) {
    common::write_quiet_config(data_dir);
    let path = data_dir.join(file);
    let bytes = garbage(64 * 1024);
    std::fs::write(&path, &bytes).expect("write garbage");
    let (status, output) = common::run_daemon_to_exit(data_dir, 300, Duration::from_secs(120));
    assert!(
        !status.success(),
        "the daemon must not start on a corrupt {file}: {status}\n{output}"
    );
    assert!(
        output.contains(&path.display().to_string()),
        "the message names {}:\n{output}",
        path.display()
    );
    let after = std::fs::read(&path).expect("read store file");
    assert!(after == bytes, "{file} was changed by the failed start");
}

#[test]
fn a_corrupt_graph_store_stops_the_daemon_and_is_kept() {
    let dir = common::data_dir();
    assert_refuses_corrupt(dir.path(), "graph.redb");
}

#[test]
fn a_corrupt_event_store_stops_the_daemon_and_is_kept() {
    let dir = common::data_dir();
    assert_refuses_corrupt(dir.path(), "events.redb");
}

/// The remediation items are read after the daemon is ready. One that is
/// not an item stops the daemon with the store's name, as a corrupt store
/// does at open, and is kept as it is: nothing acted on an empty pipeline.
#[tokio::test]
async fn a_corrupt_remediation_item_stops_the_daemon_and_is_kept() {
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), 300).await;
    let status = d.stop().await;
    assert!(status.success(), "{status}\n{}", d.log.text());

    let path = dir.path().join("graph.redb");
    let items = redb::TableDefinition::<&str, &[u8]>::new("remediation_items");
    let broken = [1u8, 0];
    let crn = {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let crn = {
            let mut t = txn.open_table(items).unwrap();
            let crn = t
                .first()
                .unwrap()
                .expect("the scan left remediation items")
                .0
                .value()
                .to_owned();
            t.insert(crn.as_str(), &broken[..]).unwrap();
            crn
        };
        txn.commit().unwrap();
        crn
    };

    let (status, output) = common::run_daemon_to_exit(dir.path(), 300, Duration::from_secs(120));
    assert!(!status.success(), "the daemon must stop: {status}\n{output}");
    assert!(
        output.contains("graph hydrated; ready"),
        "it was ready first:\n{output}"
    );
    assert!(
        output.contains("remediation items") && output.contains(&path.display().to_string()),
        "the message names the items and their store:\n{output}"
    );
    let db = redb::Database::open(&path).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(items).unwrap();
    assert_eq!(
        t.get(crn.as_str()).unwrap().unwrap().value(),
        &broken[..],
        "the item is kept"
    );
}

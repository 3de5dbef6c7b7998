//! A data directory written by the daemon before tag and property blobs
//! were varints (`tests/fixtures/graph-v1/*.gz`): `graph.redb` holding
//! format 1 node and edge records, a version 3 `graph.snap`, the ledger of
//! its one scan of the 300-resource mock estate, and `nodes.json`, every
//! node as that daemon's `GET /api/v1/graph/nodes` answered. Made with the
//! daemon of `5d2810e`: `svc daemon --mock --mock-scale 300` on an empty
//! directory (`[daemon] scan_interval = "1h"`), its nodes paged out once
//! its start scan committed, then stopped with SIGTERM; each file gzipped.
//!
//! Today's daemon does not map the old snapshot: it replays the store,
//! and every node reads as the old daemon answered it; it writes a
//! version 4 snapshot and maps it at the next start, though scans that
//! changed nothing (no source) committed after it. A scan of the
//! same estate finds the stored rows unchanged but for the estate's own
//! churn (a blob rewritten differently from a fresh one would change them
//! all), and the graph as it was before that scan, replayed from the
//! format 1 records, is still the old graph.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use common::{Api, Daemon, Sources};
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/graph-v1");
/// Resources of the fixture's estate.
const SCALE: usize = 300;

fn gunzip(name: &str) -> Vec<u8> {
    let path = format!("{FIXTURE}/{name}.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    out
}

fn unpack(dir: &Path) {
    for name in ["graph.redb", "events.redb", "graph.snap", "daemon_uuid"] {
        std::fs::write(dir.join(name), gunzip(name)).unwrap();
    }
}

/// The fields a node's stored blobs and text make: by CRN.
fn stored_fields(nodes: &[Value]) -> BTreeMap<String, Value> {
    nodes
        .iter()
        .map(|n| {
            let crn = n["crn"].as_str().unwrap_or_else(|| panic!("a node without a CRN: {n}"));
            let kept = [
                "physical_id",
                "type",
                "state",
                "cost_usd_mo",
                "creation_timestamp",
                "properties",
                "tags",
            ]
            .map(|k| (k.to_owned(), n[k].clone()));
            (crn.to_owned(), Value::Object(kept.into_iter().collect()))
        })
        .collect()
}

fn fixture_nodes() -> BTreeMap<String, Value> {
    let nodes: Vec<Value> = serde_json::from_slice(&gunzip("nodes.json")).unwrap();
    assert_eq!(nodes.len(), 302, "the fixture's node count");
    stored_fields(&nodes)
}

async fn nodes_now(api: &Api) -> BTreeMap<String, Value> {
    stored_fields(&api.all_nodes(None).await)
}

/// Every node of `graph/at` at `ts`, following its cursor.
async fn nodes_at(api: &Api, ts: &str) -> BTreeMap<String, Value> {
    let mut nodes = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = vec![("ts", ts), ("limit", "500")];
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let page = api.get_query_ok("/api/v1/graph/at", &q).await;
        nodes.extend(page["nodes"].as_array().expect("nodes array").iter().cloned());
        match page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
            Some(c) => cursor = Some(c.to_owned()),
            None => return stored_fields(&nodes),
        }
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn assert_same(got: &BTreeMap<String, Value>, want: &BTreeMap<String, Value>, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: node count");
    for (crn, w) in want {
        assert_eq!(got.get(crn), Some(w), "{what}: {crn}");
    }
}

#[tokio::test]
async fn a_graph_store_of_the_previous_format_reads_as_written_and_scans_unchanged() {
    let dir = common::data_dir();
    std::fs::create_dir_all(dir.path()).unwrap();
    unpack(dir.path());
    let want = fixture_nodes();

    // No source: the start scan finds nothing and changes nothing.
    let mut d = Daemon::configure(dir.path(), SCALE);
    d.sources = Sources::None;
    d.launch().await;
    let log = d.log.text();
    assert!(
        log.contains("snapshot not used"),
        "the version 3 snapshot is not mapped:\n{log}"
    );
    assert_same(&nodes_now(&d.api()).await, &want, "replayed from format 1 records");

    // The snapshot written in its place is this version's, and used. (A
    // scan first, so that none is running when the daemon stops.)
    d.api().scan_wait().await;
    d.restart().await;
    let snap = std::fs::read(dir.path().join("graph.snap")).unwrap();
    assert_eq!(snap.get(..8), Some(&b"SVCSNAP\x04"[..]), "a version 4 snapshot");
    let restarted = d.log.text();
    let after = restarted.rsplit("--- restart").next().unwrap_or_default();
    let loaded = after.lines().find(|l| l.contains("graph loaded")).unwrap_or_default();
    assert!(
        loaded.contains("snapshot"),
        "the second start maps the new snapshot: {loaded}\n{after}"
    );
    assert_same(&nodes_now(&d.api()).await, &want, "loaded from the version 4 snapshot");
    d.stop().await;

    // The estate scanned again (the daemon's start scan, then one more):
    // its own churn changes a few rows, not all.
    let mut d = Daemon::configure(dir.path(), SCALE);
    d.launch().await;
    let api = d.api();
    api.scan_wait().await;
    let history = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    let first_mock = history
        .iter()
        .filter(|e| {
            let m = &e["meta"];
            u(&m["scan_seq"]) > 1 && u(&m["nodes_changed"]) + u(&m["nodes_unchanged"]) > 0
        })
        .min_by_key(|e| u(&e["meta"]["scan_seq"]))
        .unwrap_or_else(|| panic!("a scan of the estate after the upgrade: {history:?}"));
    let m = &first_mock["meta"];
    let (nodes, changed, unchanged) = (u(&m["node_count"]), u(&m["nodes_changed"]), u(&m["nodes_unchanged"]));
    assert!(nodes > 250, "{m}");
    assert!(
        changed * 4 < nodes && unchanged * 2 > nodes,
        "rows read from format 1 compare equal to the same rows scanned afresh: {m}"
    );

    // The graph before those scans, replayed from the format 1 records.
    let first = history
        .iter()
        .find(|e| u(&e["meta"]["scan_seq"]) == 1)
        .unwrap_or_else(|| panic!("the fixture's scan in the history: {history:?}"));
    let at = first["ts"].as_str().unwrap_or_else(|| panic!("an event time: {first}"));
    assert_same(&nodes_at(&api, at).await, &want, "graph/at before the upgrade");
}

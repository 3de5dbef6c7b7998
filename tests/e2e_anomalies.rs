//! Cost anomalies through a real daemon in mock mode: the mock estate
//! changes between epochs (resources resized, created, deleted), so a second
//! scan has node anomalies; the answer is cached; the history and the
//! per-node baseline survive a restart without a flood of false anomalies.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;

use common::Daemon;
use serde_json::Value;

const SCALE: usize = 1500;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// Every listed node anomaly is an outlier with numbers that add up.
fn check_nodes(body: &Value, scan_seq: u64) {
    let nodes = body["nodes"].as_array().expect("nodes");
    let mut last_z = f64::INFINITY;
    for n in nodes {
        let (prev, cur, change, z) = (f(&n["previous"]), f(&n["current"]), f(&n["change"]), f(&n["z"]));
        assert!(
            (change - (cur - prev)).abs() < 0.006,
            "change is current - previous: {n}"
        );
        assert_eq!(n["direction"], if change >= 0.0 { "up" } else { "down" }, "{n}");
        assert!(z.abs() > 3.5, "only |z| > 3.5 is listed: {n}");
        assert!(z.abs() <= last_z + 1e-9, "sorted by |z|, highest first: {n}");
        last_z = z.abs();
        assert!(change.abs() >= 1.0 - 0.006, "material in dollars: {n}");
        match n["kind"].as_str() {
            Some("new") => assert_eq!((prev, n["change_pct"].clone()), (0.0, Value::Null), "{n}"),
            Some("removed") => assert_eq!(cur, 0.0, "{n}"),
            Some("changed") if prev != 0.0 => {
                let pct = f(&n["change_pct"]);
                assert!((pct - change / prev * 100.0).abs() < 0.5, "{n}");
                assert!(pct.abs() >= 10.0 - 0.01, "material in percent: {n}");
            }
            Some("changed") => {}
            other => panic!("kind {other:?}: {n}"),
        }
        assert_eq!(u(&n["scan_seq"]), scan_seq, "{n}");
        let crn = n["crn"].as_str().unwrap_or_default();
        let ty = n["type"].as_str().unwrap_or_default();
        assert!(crn.contains(&format!(":{ty}:")), "type {ty} is the crn's: {n}");
        assert!(
            crn.starts_with(&format!("crn:svc:{}:", n["provider"].as_str().unwrap_or_default())),
            "{n}"
        );
    }
}

#[tokio::test]
async fn anomalies_follow_scans_are_cached_and_survive_a_restart() {
    let dir = common::data_dir();
    let mut d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let head = u(&api.scan_wait().await["event_seq"]);

    let a = api.get_ok("/api/v1/anomalies").await;
    assert_eq!(
        (u(&a["scan_seq"]), u(&a["previous_scan_seq"])),
        (2, 1),
        "{}",
        a["summary"]
    );
    assert_eq!(a["baseline"], "previous_scan");
    assert_eq!(u(&a["cache_ttl_s"]), 30);
    let summary = &a["summary"];
    let (compared, changed, flagged) = (
        u(&summary["nodes_compared"]),
        u(&summary["nodes_changed"]),
        u(&summary["node_anomalies"]),
    );
    assert!(flagged > 0, "the mock estate changes between epochs: {summary}");
    assert!(changed >= flagged && compared > changed, "{summary}");
    assert!(
        changed * 10 < compared,
        "a few percent change an epoch, not most: {summary}"
    );
    let nodes = a["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len() as u64, flagged.min(100), "default limit 100");
    check_nodes(&a, 2);

    // A node that changed or appeared costs now what the anomaly says; one
    // that was removed is logically deleted.
    for n in nodes.iter().take(10) {
        let crn = n["crn"].as_str().unwrap_or_default();
        let node = api
            .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(crn)))
            .await;
        if n["kind"] == "removed" {
            assert!(u(&node["valid_to"]) > 0, "{node}");
        } else {
            assert!(
                (f(&node["cost_usd_mo"]) - f(&n["current"])).abs() < 0.006,
                "{n} vs {node}"
            );
        }
    }

    // The per-type history adds up to the live graph.
    let stats = api.get_ok("/api/v1/graph/stats").await;
    let history = a["history"].as_array().expect("history");
    let count: u64 = history.iter().map(|h| u(&h["count"])).sum();
    let cost: f64 = history.iter().map(|h| f(&h["cost_usd_mo"])).sum();
    assert_eq!(count, u(&stats["active_nodes"]));
    assert!((cost - f(&stats["total_cost_usd_mo"])).abs() < 1.0, "{cost} vs {stats}");
    for h in history {
        assert_eq!(
            (u(&h["scans"]), u(&h["first_scan_seq"]), u(&h["last_scan_seq"])),
            (2, 1, 2),
            "{h}"
        );
    }

    // Cached: the same answer, computed once.
    let again = api.get_ok("/api/v1/anomalies").await;
    assert_eq!(again["generated_at"], a["generated_at"]);
    assert_eq!(again["nodes"], a["nodes"]);

    // Filters select from the same answer.
    let ty = nodes[0]["type"].as_str().unwrap_or_default().to_owned();
    let one = api
        .get_query_ok("/api/v1/anomalies", &[("type", ty.as_str()), ("limit", "1")])
        .await;
    assert_eq!(one["generated_at"], a["generated_at"]);
    assert_eq!(one["nodes"].as_array().map(Vec::len), Some(1));
    assert_eq!(one["nodes"][0]["type"], ty.as_str());
    assert!(
        one["history"]
            .as_array()
            .is_some_and(|h| h.iter().all(|x| x["type"] == ty.as_str()))
    );
    api.get_query("/api/v1/anomalies", &[("limit", "0")])
        .await
        .expect_error(400, "bad_request");

    // A restart: the daemon scans at start and compares with the graph it
    // loaded, which is scan 2's, so it finds about as many changes as an
    // ordinary scan does, not every node.
    d.restart().await;
    d.wait_scan_after(head).await;
    let api = d.api();
    let b = api.get_ok("/api/v1/anomalies").await;
    assert_eq!(
        (u(&b["scan_seq"]), u(&b["previous_scan_seq"])),
        (3, 2),
        "{}",
        b["summary"]
    );
    assert_eq!(b["baseline"], "restart");
    let s = &b["summary"];
    assert!(
        u(&s["nodes_changed"]) * 10 < u(&s["nodes_compared"]),
        "no flood after a restart: {s}"
    );
    assert!(
        u(&s["nodes_changed"]) <= 3 * changed + 20,
        "{s} vs {changed} changes before"
    );
    assert!(u(&s["node_anomalies"]) > 0, "{s}");
    check_nodes(&b, 3);
    // The history kept the scans before the restart.
    assert_eq!(u(&s["history_scans"]), 3);
    let before: BTreeMap<String, f64> = history
        .iter()
        .map(|h| (format!("{}|{}", h["provider"], h["type"]), f(&h["cost_usd_mo"])))
        .collect();
    for h in b["history"].as_array().expect("history") {
        let recent: Vec<u64> = h["recent"]
            .as_array()
            .expect("recent")
            .iter()
            .map(|p| u(&p["scan_seq"]))
            .collect();
        assert_eq!(recent, [1, 2, 3], "{h}");
        if let Some(cost) = before.get(&format!("{}|{}", h["provider"], h["type"])) {
            assert!((f(&h["recent"][1]["cost_usd_mo"]) - cost).abs() < 0.006, "{h}");
        }
    }
}

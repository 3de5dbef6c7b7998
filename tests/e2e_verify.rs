//! The ghost linker and formal verification through a real daemon in mock
//! mode: every Kubernetes node is linked to the cloud machine it runs on by
//! an inferred edge, every live node gets a reachability, the proof paths
//! the oracle shows are real chains of edges from an entry point, spot
//! machines carry an interruption estimate, and solver results, node detail
//! and the SCAN_COMPLETED payload agree.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;

use common::Daemon;
use serde_json::Value;

const SCALE: usize = 1500;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

#[tokio::test]
async fn mock_estate_is_linked_and_verified() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let nodes = api.all_nodes(None).await;
    let results = api.get_ok("/api/v1/solver/results").await;
    assert_eq!(results["enabled"], true, "{results}");

    // Every live node has a reachability, and the counts add up.
    let mut by_reach: BTreeMap<String, u64> = BTreeMap::new();
    for n in &nodes {
        *by_reach.entry(s(&n["reachability"]).to_owned()).or_default() += 1;
    }
    for key in ["reachable", "unreachable", "unknown"] {
        assert_eq!(
            u(&results[key]),
            by_reach.get(key).copied().unwrap_or(0),
            "{key}: {results}"
        );
    }
    assert!(
        u(&results["reachable"]) > 0 && u(&results["unreachable"]) > 0,
        "{results}"
    );
    assert_eq!(u(&results["unknown"]), 0, "every provider scanned");
    assert_eq!(results["confidence"], 1.0);
    assert!(u(&results["entry_points"]) > 0);

    // Each Kubernetes node is linked to its machine by providerID.
    let k8s_nodes: Vec<&Value> = nodes.iter().filter(|n| n["type"] == "core:node").collect();
    assert!(!k8s_nodes.is_empty());
    let rules = results["ghost_linker"]["rules"].as_array().expect("rules");
    let by_id = rules
        .iter()
        .find(|r| r["rule"] == "k8s-provider-id")
        .expect("k8s-provider-id");
    assert_eq!(u(&by_id["matched"]), k8s_nodes.len() as u64, "{results}");
    assert_eq!(u(&by_id["reported"]), 0, "no provider reports these edges");
    let one = s(&k8s_nodes[0]["crn"]);
    let edges = api
        .get_ok(&format!("/api/v1/graph/nodes/{}/edges", common::encode_segment(one)))
        .await;
    let runs: Vec<&Value> = edges["outgoing"]
        .as_array()
        .expect("outgoing")
        .iter()
        .filter(|e| e["type"] == "Runs")
        .collect();
    assert_eq!(runs.len(), 1, "{edges}");
    assert_eq!(runs[0]["inferred"], true, "{edges}");

    // The oracle's proof of a reachable node is a chain from its entry point.
    let reachable: Vec<&Value> = nodes.iter().filter(|n| n["reachability"] == "reachable").collect();
    let mut proofs = 0;
    for n in reachable.iter().take(40) {
        let crn = s(&n["crn"]);
        let o = api
            .get_ok(&format!("/api/v1/oracle/{}", common::encode_segment(crn)))
            .await;
        assert_eq!(o["reachability"], "reachable");
        assert_eq!(o["risk_score"], n["risk_score"], "oracle and node detail agree");
        let proof = o["proof"].as_array().expect("proof");
        if o["entry_point"] == true {
            assert!(proof.is_empty());
            assert_eq!(o["entry_crn"], o["crn"]);
            continue;
        }
        proofs += 1;
        assert_eq!(proof[0]["from"], o["entry_crn"], "{o}");
        assert_eq!(
            s(&proof[proof.len() - 1]["to"]),
            o["crn"].as_str().unwrap_or_default(),
            "{o}"
        );
        for w in proof.windows(2) {
            assert_eq!(w[0]["to"], w[1]["from"], "{o}");
        }
        for step in proof {
            let ends = [&step["source_crn"], &step["target_crn"]];
            assert!(ends.contains(&&step["from"]) && ends.contains(&&step["to"]), "{step}");
        }
    }
    assert!(proofs > 0, "some reachable node is not an entry point");

    // Planted waste that nothing reaches is unreachable and cheap to remove.
    let unattached = nodes
        .iter()
        .find(|n| n["is_waste"] == true && n["type"] == "ec2:volume" && n["state"] == "available")
        .expect("an unattached volume");
    assert_eq!(unattached["reachability"], "unreachable");
    let o = api
        .get_ok(&format!(
            "/api/v1/oracle/{}",
            common::encode_segment(s(&unattached["crn"]))
        ))
        .await;
    assert_eq!(o["risk"]["reachability"], 0.0);
    assert_eq!(o["risk"]["stateful"], 20.0);
    assert!(o["proof"].as_array().is_some_and(Vec::is_empty));

    // Spot machines carry an interruption estimate.
    let spot = nodes
        .iter()
        .find(|n| n["type"] == "ec2:instance" && n["properties"]["lifecycle"] == "spot")
        .expect("a spot instance");
    let o = api
        .get_ok(&format!("/api/v1/oracle/{}", common::encode_segment(s(&spot["crn"]))))
        .await;
    assert!(u(&o["spot"]["interruption_band"]) <= 4, "{o}");
    assert_eq!(o["spot"]["machine_type"], spot["properties"]["instance_type"]);
    assert!(o["risk"]["spot"].as_f64().is_some_and(|v| v < 0.0), "{o}");

    // Filters.
    let unreachable = api
        .get_query_ok(
            "/api/v1/solver/results",
            &[("reachability", "unreachable"), ("limit", "1000")],
        )
        .await;
    let listed = unreachable["nodes"].as_array().expect("nodes");
    assert!(listed.iter().all(|n| n["reachability"] == "unreachable"));
    let risks: Vec<f64> = listed
        .iter()
        .map(|n| n["risk_score"].as_f64().unwrap_or(-1.0))
        .collect();
    assert!(risks.windows(2).all(|w| w[0] >= w[1]), "riskiest first");

    // The scan's own summary says the same.
    let scans = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    let payload = &scans.last().expect("a scan")["meta"];
    assert_eq!(payload["reachability"]["reachable"], results["reachable"], "{payload}");
    assert_eq!(payload["ghost_linker"]["added"], results["ghost_linker"]["added"]);
    assert!(u(&payload["ghost_linker"]["matched"]) >= k8s_nodes.len() as u64);
}

/// Flow-log lines between two machines make an idle machine busy and carry
/// reachability to it, from the next scan on.
#[tokio::test]
async fn observed_traffic_feeds_the_idle_rule_and_reachability() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let nodes = api.all_nodes(Some("aws")).await;
    let ip = |n: &Value| n["properties"]["private_ip"].as_str().map(str::to_owned);
    let idle = nodes
        .iter()
        .find(|n| n["verdict"] == "aws-ec2-idle" && ip(n).is_some())
        .expect("an idle instance with an address");
    assert_eq!(idle["reachability"], "unreachable", "{idle}");
    let busy = nodes
        .iter()
        .find(|n| n["type"] == "ec2:instance" && n["reachability"] == "reachable" && ip(n).is_some())
        .expect("a reachable instance with an address");
    let (from, to) = (ip(busy).unwrap_or_default(), ip(idle).unwrap_or_default());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let lines = format!(
        "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status\n\
         2 123456789012 eni-1 {from} {to} 49152 443 6 300000 400000000 {} {} ACCEPT OK\n\
         2 123456789012 eni-1 {from} {to} 49153 443 6 10 1000 {} {} ACCEPT OK\n\
         2 123456789012 eni-1 {from} 192.0.2.99 49153 443 6 10 1000 {} {} ACCEPT OK\n\
         2 123456789012 eni-1 {from} {to} 49154 443 6 10 1000 {} {} REJECT OK\n",
        now - 3600,
        now - 3000,
        now - 3000,
        now - 2400,
        now - 60,
        now,
        now - 60,
        now
    );
    let report = api.post_text("/api/v1/traffic/ingest", lines).await.expect(200);
    assert_eq!(report["records"], 4, "{report}");
    assert_eq!(report["resolved"], 2, "{report}");
    assert_eq!(report["unresolved"], 1, "{report}");
    assert_eq!(report["skipped"], 1, "the rejected flow");
    assert_eq!(report["edges_added"], 1, "{report}");
    assert_eq!(report["bytes"], 400_001_000u64, "{report}");

    let edges = api.get_ok("/api/v1/traffic/edges").await;
    assert_eq!(edges["count"], 1, "{edges}");
    let e = &edges["edges"][0];
    assert_eq!((&e["source_crn"], &e["target_crn"]), (&busy["crn"], &idle["crn"]));
    assert_eq!(e["bytes"], 400_001_000u64);
    assert_eq!(
        (u(&e["records"]), u(&e["window_start"]), u(&e["window_end"])),
        (2, now - 3600, now - 2400)
    );

    // Malformed input: a clear error, nothing ingested.
    api.post_text("/api/v1/traffic/ingest", "2 too short\n".to_owned())
        .await
        .expect_error(422, "invalid");
    api.post_raw("/api/v1/traffic/ingest", "{not json")
        .await
        .expect_error(400, "bad_request");
    assert_eq!(api.get_ok("/api/v1/traffic/edges").await["count"], 1);

    // The next scan: the machine is busy and reached over the flow.
    api.scan_wait().await;
    let crn = s(&idle["crn"]);
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(crn)))
        .await;
    assert_eq!(node["is_waste"], false, "{node}");
    assert_eq!(node["reachability"], "reachable", "{node}");
    let o = api
        .get_ok(&format!("/api/v1/oracle/{}", common::encode_segment(crn)))
        .await;
    let last = o["proof"]
        .as_array()
        .and_then(|p| p.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&last["from"], &last["relation"], &last["inferred"]),
        (&busy["crn"], &Value::from("FlowsTo"), &Value::from(true))
    );
}

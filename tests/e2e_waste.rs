//! The built-in waste rules through a real daemon in mock mode: exactly the
//! resources the mock estate plants as waste are flagged, and the waste
//! ledger, the heuristics status, node detail, topology and graph stats
//! tell the same story. The pattern phase's groups, outliers and grouped
//! findings agree with the verdicts.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::Daemon;
use serde_json::Value;
use svc_mock_estate::MockEstate;

const SCALE: usize = 1500;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test]
async fn mock_estate_waste_is_found_and_summarised() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let nodes = api.all_nodes(None).await;
    let flagged: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n["is_waste"] == true)
        .map(|n| n["crn"].as_str().unwrap_or_default().to_owned())
        .collect();
    // The daemon's mock estate is seed 42; its first scan shows epoch 0.
    let (truth, _) = MockEstate::new(42, SCALE).waste_truth(0);
    let truth: BTreeSet<String> = truth.into_iter().collect();
    assert_eq!(
        flagged.len(),
        truth.len(),
        "missed: {:?}; not planted: {:?}",
        truth.difference(&flagged).take(5).collect::<Vec<_>>(),
        flagged.difference(&truth).take(5).collect::<Vec<_>>()
    );
    assert_eq!(flagged, truth, "exactly the planted waste");

    // Node detail: the verdict, its reason and the findings behind it.
    let one = flagged
        .iter()
        .find(|c| c.contains(":ec2:volume:"))
        .expect("a flagged volume");
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", common::encode_segment(one)))
        .await;
    let verdict = node["verdict"].as_str().unwrap_or_default();
    assert!(verdict.starts_with("aws-ebs-"), "{node}");
    assert!(
        node["waste_reason"].as_str().unwrap_or_default().contains("GiB"),
        "{node}"
    );
    let finding = &node["findings"][0];
    assert!(f(&finding["risk_score"]) >= 80.0, "{node}");
    assert_eq!(
        (&finding["source"], &finding["rule"]),
        (&Value::from("builtin"), &node["verdict"])
    );
    assert!(f(&finding["projected_savings_usd_mo"]) > 0.0, "{finding}");

    // The waste ledger adds up, per type and in total.
    let ledger = api.get_query_ok("/api/v1/waste-ledger", &[("top", "3")]).await;
    let types = ledger["types"].as_array().expect("types");
    let by_type: BTreeMap<&str, &Value> = types
        .iter()
        .map(|t| (t["type"].as_str().unwrap_or_default(), t))
        .collect();
    let waste_by_type =
        nodes
            .iter()
            .filter(|n| n["is_waste"] == true)
            .fold(BTreeMap::<String, u64>::new(), |mut m, n| {
                *m.entry(n["type"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
                m
            });
    for (ty, count) in &waste_by_type {
        let line = by_type.get(ty.as_str()).unwrap_or_else(|| panic!("{ty} in the ledger"));
        assert_eq!(u(&line["waste_count"]), *count, "{line}");
        let top = line["top"].as_array().expect("top");
        assert!(!top.is_empty() && top.len() <= 3, "{line}");
        let savings: Vec<f64> = top.iter().map(|r| f(&r["projected_savings_usd_mo"])).collect();
        assert!(savings.windows(2).all(|w| w[0] >= w[1]), "largest first: {savings:?}");
    }
    let sum: f64 = types.iter().map(|t| f(&t["projected_savings_usd_mo"])).sum();
    let total = f(&ledger["totals"]["projected_savings_usd_mo"]);
    assert!((sum - total).abs() < 0.05 * types.len() as f64, "{sum} vs {total}");
    let savings_order: Vec<f64> = types.iter().map(|t| f(&t["projected_savings_usd_mo"])).collect();
    assert!(savings_order.windows(2).all(|w| w[0] >= w[1]), "{savings_order:?}");
    assert_eq!(ledger["price_table"], svc_engine::prices::VERSION);
    let aws_only = api.get_query_ok("/api/v1/waste-ledger", &[("provider", "aws")]).await;
    assert!(
        aws_only["types"]
            .as_array()
            .expect("types")
            .iter()
            .all(|t| t["provider"] == "aws")
    );
    api.get_query("/api/v1/waste-ledger", &[("top", "0")])
        .await
        .expect_error(400, "bad_request");

    // Graph stats, topology meta and the ledger agree on the money.
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(u(&stats["waste_nodes"]), truth.len() as u64);
    assert!((f(&stats["projected_savings_usd_mo"]) - total).abs() < 0.05, "{stats}");
    let topology = api.get_ok("/api/v1/topology").await;
    assert!(
        (f(&topology["meta"]["waste_identified_usd_mo"]) - f(&ledger["totals"]["waste_usd_mo"])).abs() < 0.05,
        "{}",
        topology["meta"]
    );

    // The status: counts, verdicts over the live graph, who flagged what.
    let status = api.get_ok("/api/v1/heuristics/status").await;
    let verdicts = &status["verdicts"];
    assert_eq!(u(&verdicts["waste"]), truth.len() as u64, "{verdicts}");
    assert_eq!(
        u(&verdicts["waste"]) + u(&verdicts["optimize"]) + u(&verdicts["clear"]),
        u(&stats["active_nodes"])
    );
    let rules = status["rules"].as_array().expect("rules");
    assert!(rules.len() >= 30, "the catalogue is listed");
    let decided: u64 = rules.iter().map(|r| u(&r["decided"])).sum();
    assert_eq!(decided, u(&verdicts["waste"]) + u(&verdicts["optimize"]));
    assert!(rules.iter().any(|r| r["name"] == verdict && u(&r["findings"]) > 0));
    let builtin = status["engines"]
        .as_array()
        .expect("engines")
        .iter()
        .find(|e| e["source"] == "builtin")
        .expect("the built-in engine");
    assert!(u(&builtin["waste"]) >= truth.len() as u64, "{builtin}");
    assert!(u(&status["counts"]["ignored"]) > 0, "svc:ignore tags are honoured");
    let ignored = &status["ignored"][0];
    assert_eq!(ignored["reason"], "svc:ignore=true", "{ignored}");
    assert!(!flagged.contains(ignored["crn"].as_str().unwrap_or_default()));

    // The pattern phase: every active resource signed, grouped findings made
    // of resources flagged by their rule, outliers on the minority side.
    let pattern = &status["pattern"];
    assert_eq!(pattern["scan_seq"], status["scan_seq"], "{pattern}");
    assert_eq!(u(&pattern["rounds"]), 2);
    assert_eq!(u(&pattern["signatures"]), u(&stats["active_nodes"]), "{pattern}");
    assert!(u(&pattern["groups"]) > 0, "{pattern}");
    assert!(u(&pattern["grouped_nodes"]) <= u(&pattern["signatures"]));
    let by_crn: BTreeMap<&str, &Value> = nodes
        .iter()
        .map(|n| (n["crn"].as_str().unwrap_or_default(), n))
        .collect();
    let grouped = pattern["grouped"].as_array().expect("grouped");
    assert!(!grouped.is_empty(), "alike planted waste is grouped: {pattern}");
    assert_eq!(grouped.len() as u64, u(&pattern["grouped_total"]).min(100));
    for g in grouped {
        let members = u(&g["members"]);
        assert!(members >= 3 && members <= u(&g["group_size"]), "{g}");
        assert!(f(&g["savings_usd_mo"]) >= 0.0, "{g}");
        let rule = g["rule"].as_str().expect("rule");
        let summary = g["summary"].as_str().expect("summary");
        assert!(
            summary.contains(rule) && summary.starts_with(&format!("{members} alike ")),
            "{g}"
        );
        let samples = g["samples"].as_array().expect("samples");
        assert!(
            !samples.is_empty() && samples.len() <= 5 && samples.len() as u64 <= members,
            "{g}"
        );
        for crn in samples {
            let crn = crn.as_str().expect("crn");
            assert!(flagged.contains(crn), "a grouped member is waste: {crn}");
            let node = by_crn[crn];
            assert_eq!(node["verdict"], g["rule"], "{node}");
            assert_eq!(node["type"], g["type"], "{node}");
        }
    }
    assert!(grouped.iter().any(|g| f(&g["savings_usd_mo"]) > 0.0), "{pattern}");
    let outliers = pattern["outliers"].as_array().expect("outliers");
    assert_eq!(outliers.len() as u64, u(&pattern["outliers_total"]).min(100));
    for o in outliers {
        let crn = o["crn"].as_str().expect("crn");
        let (size, waste) = (u(&o["group_size"]), u(&o["group_waste"]));
        assert!(size >= 3 && waste <= size, "{o}");
        match o["direction"].as_str() {
            Some("waste_among_in_use") => {
                assert!(flagged.contains(crn), "{o}");
                assert!((size - waste) * 5 >= size * 4, "{o}");
            }
            Some("in_use_among_waste") => {
                assert!(!flagged.contains(crn), "{o}");
                assert!(waste * 5 >= size * 4, "{o}");
            }
            other => panic!("direction {other:?}"),
        }
    }
    let scans = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    let counts = &scans[0]["meta"]["pattern"];
    assert_eq!(counts["groups"], pattern["groups"], "{counts}");
    assert_eq!(counts["outliers"], pattern["outliers_total"], "{counts}");
    assert_eq!(counts["grouped"], pattern["grouped_total"], "{counts}");
}

/// What the whole-graph answers say, read twice (the second read is the
/// kept answer): graph stats, the waste ledger's totals, `graph/nodes`'
/// totals (unfiltered and of the waste) and the nodes of the breakdown by
/// type.
async fn whole_graph_answers(api: &common::Api) -> Value {
    let read = || async {
        let stats = api.get_ok("/api/v1/graph/stats").await;
        let ledger = api.get_query_ok("/api/v1/waste-ledger", &[("top", "2")]).await;
        let all = api.get_query_ok("/api/v1/graph/nodes", &[("limit", "1")]).await;
        let waste = api
            .get_query_ok("/api/v1/graph/nodes", &[("limit", "1"), ("waste", "true")])
            .await;
        let by_type = api
            .get_query_ok("/api/v1/graph/breakdown", &[("by", "type"), ("limit", "3")])
            .await;
        let rest = &by_type["rest"];
        let grouped = by_type["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| u(&g["nodes"]))
            .sum::<u64>()
            + rest.get("nodes").map_or(0, u);
        serde_json::json!({
            "breakdown_nodes": grouped,
            "active_nodes": stats["active_nodes"],
            "total_edges": stats["total_edges"],
            "total_cost_usd_mo": stats["total_cost_usd_mo"],
            "waste_nodes": stats["waste_nodes"],
            "ledger_totals": ledger["totals"],
            "ledger_scan_seq": ledger["scan_seq"],
            "nodes_total": all["total"],
            "waste_total": waste["total"],
        })
    };
    let first = read().await;
    assert_eq!(read().await, first, "a kept answer differs from the one before it");
    first
}

/// The answers kept between requests follow the graph: after a later scan
/// (the mock estate churns) each is the new graph's, as counted afresh by
/// listing every node; none is the scan before's.
#[tokio::test]
async fn whole_graph_answers_follow_each_scan() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), SCALE).await;
    let api = d.api();
    let before = whole_graph_answers(&api).await;
    let mut changed = false;
    for _ in 0..3 {
        api.scan_wait().await;
        let after = whole_graph_answers(&api).await;
        let nodes = api.all_nodes(None).await;
        let waste = nodes.iter().filter(|n| n["is_waste"] == true).count() as u64;
        assert_eq!(u(&after["active_nodes"]), nodes.len() as u64, "{after}");
        assert_eq!(u(&after["nodes_total"]), nodes.len() as u64, "{after}");
        assert_eq!(u(&after["breakdown_nodes"]), nodes.len() as u64, "{after}");
        assert_eq!(u(&after["waste_nodes"]), waste, "{after}");
        assert_eq!(u(&after["waste_total"]), waste, "{after}");
        let cost: f64 = nodes.iter().map(|n| f(&n["cost_usd_mo"])).sum();
        let total = f(&after["total_cost_usd_mo"]);
        assert!((total - cost).abs() <= cost * 1e-4 + 0.05, "{after} against {cost}");
        assert_ne!(after["ledger_scan_seq"], before["ledger_scan_seq"]);
        changed |= after["active_nodes"] != before["active_nodes"] || after["ledger_totals"] != before["ledger_totals"];
    }
    assert!(
        changed,
        "three later scans of the mock estate changed no count: the test shows nothing"
    );
}

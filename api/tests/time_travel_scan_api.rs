//! Time travel, scan triggers and metrics through the real router.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod graph_fixture;

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use axum::http::StatusCode;
use graph_fixture::*;
use serde_json::{Value, json};
use svc_api::routes::rfc3339;

/// The sample estate scanned once; then the function removed, the instance
/// stopped and a volume added. Returns the fixture and a time between the
/// two scans.
fn two_scans() -> (Fixture, u64) {
    let f = Fixture::new(Estate::sample());
    let between = f.engine.now_us();
    f.rescan(|e| {
        e.remove(&function());
        e.node(&instance(), "stopped", 70.0);
        e.node(&aws("volume", "vol-2"), "available", 8.0);
    });
    (f, between)
}

fn find<'a>(list: &'a Value, crn: &str) -> Option<&'a Value> {
    list.as_array().unwrap().iter().find(|n| n["crn"] == crn)
}

#[tokio::test]
async fn graph_at_shows_the_graph_as_it_was() {
    let (f, between) = two_scans();
    let before = f.get_ok(&format!("/api/v1/graph/at?ts={}", rfc3339(between))).await;
    assert_eq!(before["ts"], rfc3339(between));
    assert_eq!((&before["total_nodes"], &before["total_edges"]), (&json!(9), &json!(6)));
    assert_eq!(find(&before["nodes"], &instance()).unwrap()["state"], "running");
    assert!(find(&before["nodes"], &function()).is_some());
    assert!(find(&before["nodes"], &aws("volume", "vol-2")).is_none());
    let edge = before["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source_crn"] == function())
        .unwrap();
    assert_eq!((&edge["target_crn"], &edge["type"]), (&json!(db()), &json!("Uses")));
    // Rows are shown as they were at that time: not yet deleted.
    assert_eq!(edge["valid_to"], 0);
    assert_eq!(find(&before["nodes"], &function()).unwrap()["valid_to"], 0);
    assert_eq!(find(&before["nodes"], &db()).unwrap()["valid_to"], 0);

    let now = f
        .get_ok(&format!("/api/v1/graph/at?ts={}", rfc3339(f.engine.now_us())))
        .await;
    assert_eq!((&now["total_nodes"], &now["total_edges"]), (&json!(9), &json!(5)));
    assert_eq!(find(&now["nodes"], &instance()).unwrap()["state"], "stopped");
    assert!(find(&now["nodes"], &function()).is_none());
    let vol2 = find(&now["nodes"], &aws("volume", "vol-2")).unwrap();
    assert_eq!(
        (&vol2["cost_usd_mo"], &vol2["properties"]["size_gib"]),
        (&json!(8.0), &json!(100))
    );

    // Before anything was scanned the graph was empty.
    let empty = f.get_ok("/api/v1/graph/at?ts=2001-01-01T00:00:00Z").await;
    assert_eq!(
        (&empty["total_nodes"], empty["nodes"].as_array().unwrap().len()),
        (&json!(0), 0)
    );
    // An offset whose '+' arrived unescaped still parses.
    f.get_ok("/api/v1/graph/at?ts=2001-01-01T01:00:00+01:00").await;
}

#[tokio::test]
async fn graph_at_pages_cover_every_node_and_edge_once() {
    let (f, _) = two_scans();
    let ts = rfc3339(f.engine.now_us());
    let (mut nodes, mut edges) = (HashSet::new(), HashSet::new());
    let mut uri = format!("/api/v1/graph/at?ts={ts}&limit=2");
    loop {
        let page = f.get_ok(&uri).await;
        for c in strs(&page["nodes"], "crn") {
            assert!(nodes.insert(c));
        }
        for e in page["edges"].as_array().unwrap() {
            assert!(edges.insert((
                e["source_crn"].to_string(),
                e["target_crn"].to_string(),
                e["type"].to_string()
            )));
        }
        match page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
            Some(c) => uri = format!("/api/v1/graph/at?ts={ts}&limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!((nodes.len(), edges.len()), (9, 5));
}

#[tokio::test]
async fn time_parameters_are_checked() {
    let f = Fixture::new(Estate::sample());
    for uri in [
        "/api/v1/graph/at",
        "/api/v1/graph/at?ts=",
        "/api/v1/graph/at?ts=yesterday",
        "/api/v1/graph/at?ts=2026-01-01T00:00:00Z&limit=0",
        "/api/v1/graph/at?ts=2026-01-01T00:00:00Z&cursor=%21",
        "/api/v1/graph/diff",
        "/api/v1/graph/diff?from=2026-01-01T00:00:00Z",
        "/api/v1/graph/diff?to=2026-01-01T00:00:00Z",
        "/api/v1/graph/diff?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
        "/api/v1/graph/diff?from=2026-01-01T00:00:00Z&to=soon",
    ] {
        let (status, body) = f.get(uri).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    }
}

#[tokio::test]
async fn diff_shows_added_removed_and_changed() {
    let (f, between) = two_scans();
    let to = f.engine.now_us();
    let d = f
        .get_ok(&format!(
            "/api/v1/graph/diff?from={}&to={}",
            rfc3339(between),
            rfc3339(to)
        ))
        .await;
    assert_eq!(
        d["counts"],
        json!({"added": 1, "removed": 1, "changed": 3, "edges_added": 0, "edges_removed": 1, "edges_changed": 0}),
        "{d}"
    );
    assert_eq!(strs(&d["added"], "crn"), vec![aws("volume", "vol-2")]);
    assert_eq!(strs(&d["removed"], "crn"), vec![function()]);
    let changed = |crn: &str| {
        d["changed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["crn"] == crn)
            .unwrap_or_else(|| panic!("{crn} changed: {d}"))
            .clone()
    };
    // The instance was stopped; what stays behind is judged anew.
    let stopped = changed(&instance());
    let others: Vec<&Value> = d["changed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["crn"] != instance())
        .collect();
    // Its volume is judged anew; the database lost its one user, so its
    // removal risk fell.
    assert_eq!(others.len(), 2, "{d}");
    // Now waste, it also entered the remediation pipeline.
    assert_eq!(
        changed(&volume())["fields"],
        json!(["is_waste", "phase", "verdict", "waste_reason"])
    );
    assert_eq!(changed(&db())["fields"], json!(["risk_score"]));
    let changed = &stopped;
    assert_eq!(
        (&changed["before"]["state"], &changed["after"]["state"]),
        (&json!("running"), &json!("stopped"))
    );
    // Stopped long after it was created, it is now judged waste as well
    // (and entered the remediation pipeline).
    assert_eq!(
        changed["fields"],
        json!(["is_waste", "phase", "state", "verdict", "waste_reason"])
    );
    assert_eq!(changed["after"]["verdict"], "aws-ec2-stopped");
    assert_eq!(d["edges_removed"][0]["source_crn"], function());
    assert_eq!(d["truncated"], false);
    // An empty interval changes nothing.
    let same = f
        .get_ok(&format!("/api/v1/graph/diff?from={0}&to={0}", rfc3339(to)))
        .await;
    assert_eq!(same["counts"]["added"], 0);
    assert_eq!(same["counts"]["changed"], 0);
    // The deleted node is still served, with valid_to set, and listed on request.
    let gone = f.get_ok(&format!("/api/v1/graph/nodes/{}", function())).await;
    assert!(gone["valid_to"].as_u64().unwrap() > 0);
    assert_eq!((&gone["edges_out"], &gone["edges_in"]), (&json!(0), &json!(0)));
    assert_eq!(f.get_ok("/api/v1/graph/nodes").await["total"], 9);
    assert_eq!(f.get_ok("/api/v1/graph/nodes?include_deleted=true").await["total"], 10);
    let stats = f.get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        (&stats["active_nodes"], &stats["logically_deleted"]),
        (&json!(9), &json!(1))
    );
}

#[tokio::test]
async fn scans_conflict_while_one_runs() {
    let f = Fixture::new(Estate::sample());
    let permit = f.engine.try_start_scan().unwrap();
    for uri in ["/api/v1/engine/scan", "/api/v1/sync", "/api/v1/engine/scan?wait=true"] {
        let (status, body) = f.post(uri, None).await;
        let msg = assert_error(status, &body, StatusCode::CONFLICT, "conflict");
        assert_eq!(msg, "a scan is already running");
    }
    drop(permit);
    let (status, body) = f.post("/api/v1/engine/scan", Some(r#"{"wait": true}"#)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["status"], &body["scan_seq"], &body["node_count"]),
        (&json!("completed"), &json!(2), &json!(9))
    );
    assert!(body["event_seq"].as_u64().unwrap() >= 2);
    let (status, body) = f.post("/api/v1/sync?wait=true", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["status"], &body["cycle"], &body["scan_seq"]),
        (&json!("completed"), &json!("sync"), &json!(3))
    );
    for bad in [
        "{not json",
        r#"{"wait": "yes"}"#,
        "[true]",
        r#"{"timeout": "0s"}"#,
        r#"{"timeout": "500000000y"}"#,
    ] {
        let (status, body) = f.post("/api/v1/engine/scan", Some(bad)).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    }
    let (status, body) = f.post("/api/v1/engine/scan?wait=perhaps", None).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    // A message quoting a huge value is cut, saying how long it was.
    let huge = format!(r#"{{"timeout": "{}"}}"#, "é".repeat(300_000));
    let (status, body) = f.post("/api/v1/engine/scan", Some(&huge)).await;
    let msg = assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    assert!(
        msg.len() < 2200 && msg.ends_with(" bytes in all)"),
        "{} bytes: {}",
        msg.len(),
        msg.chars().take(40).collect::<String>()
    );
}

#[tokio::test]
async fn a_scan_started_without_waiting_finishes_in_the_background() {
    let f = Fixture::new(Estate::sample());
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    f.engine.add_scan_listener(Box::new(move |r| {
        let _ = tx.lock().map(|t| t.send(r.scan_seq));
    }));
    let (status, body) = f.post("/api/v1/sync", None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"status": "started", "scan_seq": 2, "cycle": "sync"}));
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let next = || {
        let rx = rx.clone();
        tokio::task::spawn_blocking(move || rx.lock().unwrap().recv_timeout(Duration::from_secs(60)).ok())
    };
    assert_eq!(next().await.unwrap(), Some(2));
    // The report is out just before the scan lets go of its permit: a
    // client that is told 409 then asks again.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (status, body) = loop {
        let (status, body) = f.post("/api/v1/engine/scan", Some("")).await;
        if status != StatusCode::CONFLICT || std::time::Instant::now() > deadline {
            break (status, body);
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!((&body["status"], &body["scan_seq"]), (&json!("started"), &json!(3)));
    assert_eq!(next().await.unwrap(), Some(3));
}

#[tokio::test]
async fn metrics_expose_scans_http_and_pass_promtool() {
    let f = Fixture::new(Estate::sample());
    f.get_ok(&format!("/api/v1/graph/nodes/{}", enc(POD))).await;
    f.get("/api/v1/nope").await;
    let req = axum::http::Request::builder()
        .uri("/metrics")
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = tower::ServiceExt::oneshot(f.app.clone(), req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/plain; version=0.0.4");
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    for want in [
        "svc_scan_duration_seconds_bucket{le=",
        "svc_scan_duration_seconds_count 1",
        "svc_nodes_discovered_total{provider=\"aws\"} 8",
        "svc_nodes_discovered_total{provider=\"kubernetes\"} 1",
        "# TYPE svc_waste_usd_total untyped",
        "svc_waste_usd_total 0",
        "svc_graph_nodes 9",
        "svc_graph_edges 6",
        "svc_scans_total{outcome=\"success\"} 1",
        "svc_ledger_events_total 1",
        "svc_process_uptime_seconds ",
        "svc_http_requests_total{method=\"GET\",route=\"/api/v1/graph/nodes/{crn}\",status=\"200\"} 1",
        "svc_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 1",
        "svc_http_request_duration_seconds_bucket{method=\"GET\",route=\"/api/v1/graph/nodes/{crn}\",le=",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(mut child) => {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "promtool: {}{}\n{text}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Err(e) => eprintln!("promtool not available ({e}); exposition format not linted"),
    }
}

/// A node's versions, newest first: a changed node has two, a removed one
/// ends in its deletion, an untouched one has one; unknown and malformed
/// CRNs are refused.
#[tokio::test]
async fn a_nodes_versions_newest_first() {
    let (f, between) = two_scans();
    let path = |crn: &str| format!("/api/v1/graph/nodes/{}/versions", urlencode(crn));
    let inst = f.get_ok(&path(&instance())).await;
    assert_eq!(inst["crn"], instance());
    let v = inst["versions"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{inst}");
    assert_eq!((&v[0]["state"], &v[1]["state"]), (&json!("stopped"), &json!("running")));
    assert!(v[0]["valid_from"].as_u64().unwrap() > between);
    assert!(v[1]["valid_from"].as_u64().unwrap() <= between);
    assert_eq!(inst["total"], 2);

    let gone = f.get_ok(&path(&function())).await;
    let v = gone["versions"].as_array().unwrap();
    assert!(
        v[0]["valid_to"].as_u64().unwrap() > 0,
        "the newest version is the deletion: {gone}"
    );
    assert_eq!(v.last().unwrap()["valid_to"], 0);

    // The role stands alone: nothing about it changed in the second scan.
    let same = f.get_ok(&path(ROLE)).await;
    assert_eq!(same["versions"].as_array().unwrap().len(), 1, "{same}");

    let one = f.get_ok(&format!("{}?limit=1", path(&instance()))).await;
    assert_eq!(one["versions"].as_array().unwrap().len(), 1);
    assert_eq!(one["total"], 2);

    let (status, _) = f
        .call("GET", &path(&aws("volume", "vol-never")), Some(TOKEN), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = f
        .call("GET", "/api/v1/graph/nodes/not-a-crn/versions", Some(TOKEN), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

//! The live-graph endpoints through the real router: shapes, paging, CRN
//! forms in paths, errors, and the streamed topology with its checksum.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod graph_fixture;

use std::collections::HashSet;

use axum::http::StatusCode;
use graph_fixture::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[tokio::test]
async fn api_routes_need_a_token() {
    let f = Fixture::new(Estate::sample());
    for uri in [
        "/api/v1/graph/stats",
        "/api/v1/topology",
        "/api/v1/graph/nodes",
        "/api/v1/graph",
    ] {
        let (status, bytes) = f.call("GET", uri, None, None).await;
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthorized");
        let (status, _) = f.call("GET", uri, Some("wrong"), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _) = f.call("POST", "/api/v1/engine/scan", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // A 401 names the scheme; the scheme's name is case-insensitive.
    let send = |authorization: String| {
        let req = axum::http::Request::builder()
            .uri("/api/v1/graph/stats")
            .header("authorization", authorization)
            .body(axum::body::Body::empty())
            .unwrap();
        tower::ServiceExt::oneshot(f.app.clone(), req)
    };
    let resp = send(format!("Basic {TOKEN}")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(resp.headers()["www-authenticate"], "Bearer realm=\"svc\"");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let resp = send(format!("{scheme} {TOKEN}")).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{scheme}");
    }
}

/// A body over the limit is refused with 413 by every route, also one
/// that reads no body, and before the token is looked at.
#[tokio::test]
async fn an_oversized_body_is_refused_by_every_route() {
    let f = Fixture::new(Estate::sample());
    let big = "x".repeat(svc_api::MAX_BODY_BYTES + 1);
    for (uri, token) in [
        ("/api/v1/ledger/export", Some(TOKEN)),
        ("/api/v1/engine/scan", Some(TOKEN)),
        ("/api/v1/ledger/export", None),
    ] {
        let (status, bytes) = f.call("POST", uri, token, Some(&big)).await;
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
        assert!(
            body["error"]["message"].as_str().unwrap().contains("1048577 bytes"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn stats_count_the_visible_graph() {
    let f = Fixture::new(Estate::sample());
    let mut s = f.get_ok("/api/v1/graph/stats").await;
    let finished = s["sources"][0]["last_scan"]["finished_at"].take();
    assert!(finished.as_str().is_some_and(|t| t.ends_with('Z')), "{s}");
    assert_eq!(
        s,
        json!({
            "total_nodes": 9, "active_nodes": 9, "logically_deleted": 0, "total_edges": 6,
            "waste_nodes": 0, "total_cost_usd_mo": 413.6, "projected_savings_usd_mo": 0.0,
            "providers": {"aws": 8, "kubernetes": 1},
            // The fixture's one source, which the server was not told is simulated.
            "simulated": false,
            "sources": [{
                "name": "test", "providers": ["aws", "kubernetes"], "simulated": false,
                "last_scan": {"scan_seq": 1, "ok": true, "error": "", "nodes": 9, "finished_at": null},
            }],
        })
    );
}

#[tokio::test]
async fn node_pages_visit_every_node_once() {
    let f = Fixture::new(Estate::sample());
    let mut seen = HashSet::new();
    let mut uri = "/api/v1/graph/nodes?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let page = f.get_ok(&uri).await;
        assert_eq!(page["total"], 9);
        for crn in strs(&page["nodes"], "crn") {
            assert!(seen.insert(crn.clone()), "{crn} listed twice");
        }
        pages += 1;
        match page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
            Some(c) => uri = format!("/api/v1/graph/nodes?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!((seen.len(), pages), (9, 5));
    // Defaults, and the provider filter.
    let all = f.get_ok("/api/v1/graph/nodes").await;
    assert_eq!(
        (all["nodes"].as_array().unwrap().len(), &all["next_cursor"]),
        (9, &json!(""))
    );
    let k8s = f.get_ok("/api/v1/graph/nodes?provider=kubernetes").await;
    assert_eq!(strs(&k8s["nodes"], "crn"), vec![POD.to_owned()]);
    assert_eq!(k8s["total"], 1);
    let none = f.get_ok("/api/v1/graph/nodes?provider=oracle").await;
    assert_eq!(
        (&none["total"], none["nodes"].as_array().unwrap().len()),
        (&json!(0), 0)
    );
    // Bad parameters are 400 with the error body.
    for q in [
        "limit=0",
        "limit=1001",
        "limit=abc",
        "limit=-3",
        "cursor=%21%21",
        "cursor=AAAA",
        "include_deleted=maybe",
    ] {
        let (status, body) = f.get(&format!("/api/v1/graph/nodes?{q}")).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    }
}

/// A cursor issued before the graph was compacted names a row that may be
/// another node's now: it is refused with a message that says to list
/// again, and a new listing visits every live node once.
#[tokio::test]
async fn a_cursor_from_before_a_compaction_is_refused() {
    let mut estate = Estate::default();
    let volumes: Vec<String> = (0..40).map(|i| aws("volume", &format!("vol-{i:02}"))).collect();
    for crn in &volumes {
        estate.node(crn, "available", 1.0);
    }
    let f = Fixture::new(estate);
    f.engine.set_compaction_min_rows(1);
    let page = f.get_ok("/api/v1/graph/nodes?limit=2").await;
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let last = strs(&page["nodes"], "crn").pop().unwrap();
    // The cursor's node and nine more go: a quarter of the rows retired,
    // compacted at the start of the scan after the one that retired them.
    let gone: Vec<String> = std::iter::once(last.clone())
        .chain(volumes.iter().filter(|c| **c != last).take(9).cloned())
        .collect();
    f.rescan(|e| {
        for crn in &gone {
            e.remove(crn);
        }
    });
    let (status, _) = f.get(&format!("/api/v1/graph/nodes?limit=2&cursor={cursor}")).await;
    assert_eq!(status, StatusCode::OK, "not compacted yet: the cursor still holds");
    f.rescan(|_| {});
    let (status, body) = f.get(&format!("/api/v1/graph/nodes?limit=2&cursor={cursor}")).await;
    let message = assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    assert!(message.contains("stale cursor"), "{message}");
    let stats = f.get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        (&stats["total_nodes"], &stats["logically_deleted"]),
        (&json!(30), &json!(0))
    );
    let mut seen = HashSet::new();
    let mut uri = "/api/v1/graph/nodes?limit=7".to_owned();
    loop {
        let page = f.get_ok(&uri).await;
        for crn in strs(&page["nodes"], "crn") {
            assert!(!gone.contains(&crn), "{crn} was retired");
            assert!(seen.insert(crn.clone()), "{crn} listed twice");
        }
        match page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
            Some(c) => uri = format!("/api/v1/graph/nodes?limit=7&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 30);
}

#[tokio::test]
async fn node_objects_carry_every_field_with_json_types() {
    let f = Fixture::new(Estate::sample());
    let page = f.get_ok("/api/v1/graph/nodes?limit=1000").await;
    let vol = page["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["crn"] == volume())
        .unwrap()
        .clone();
    let valid_from = vol["valid_from"].as_u64().unwrap();
    assert!(valid_from > 1_600_000_000_000_000, "microseconds: {valid_from}");
    assert_eq!(
        vol,
        json!({
            "crn": volume(), "type": "ec2:volume", "provider": "aws", "region": "us-east-1",
            "service": "ec2", "kind": "volume", "account": "123456789012", "physical_id": "vol-1",
            "state": "in-use", "cost_usd_mo": 40.1, "tags": {"env": "prod"},
            "properties": {"size_gib": 100, "encrypted": true, "iops": 3000.5,
                "attachments": [{"device": "/dev/xvda"}], "name": "vol-1"},
            "creation_timestamp": 1_700_000_000u64, "valid_from": valid_from, "valid_to": 0,
            // No entry point reaches it; risk: holds data 20, one dependent
            // (its instance) 10, $40.10/mo 6.
            "is_waste": false, "waste_reason": "", "risk_score": 36.0, "reachability": "unreachable",
            "phase": "", "verdict": "",
        })
    );
}

#[tokio::test]
async fn one_node_by_any_crn_form() {
    let f = Fixture::new(Estate::sample());
    let vol = volume();
    let forms = [
        vol.clone(),
        vol.replacen("crn:svc:", "crn:", 1),
        "crn:svc:aws:us-east-1:123456789012:volume:vol-1".to_owned(),
        "crn:aws:us-east-1:123456789012:volume:vol-1".to_owned(),
    ];
    for form in forms {
        for path in [form.clone(), enc(&form)] {
            let n = f.get_ok(&format!("/api/v1/graph/nodes/{path}")).await;
            assert_eq!(n["crn"], vol, "{path}");
            assert_eq!((&n["edges_out"], &n["edges_in"]), (&json!(1), &json!(0)), "{path}");
        }
    }
    // A slash in the id must be percent-encoded; colons in an ARN id survive.
    let pod = f.get_ok(&format!("/api/v1/graph/nodes/{}", enc(POD))).await;
    assert_eq!(
        (pod["crn"].as_str(), pod["physical_id"].as_str()),
        (Some(POD), Some("default/web-1"))
    );
    let role = f.get_ok(&format!("/api/v1/graph/nodes/{}", enc(ROLE))).await;
    assert_eq!(role["physical_id"], "arn:aws:iam::123456789012:role/app");
    let inst = f.get_ok(&format!("/api/v1/graph/nodes/{}", instance())).await;
    assert_eq!((&inst["edges_out"], &inst["edges_in"]), (&json!(1), &json!(3)));
    // Malformed is 422, unknown is 404, both with the error body.
    for bad in [
        "not-a-crn",
        "crn:svc:aws",
        "crn:svc:aws:us-east-1:ec2:volume:123456789012:has%20space",
    ] {
        let (status, body) = f.get(&format!("/api/v1/graph/nodes/{bad}")).await;
        let msg = assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
        assert!(msg.contains("invalid crn"), "{msg}");
    }
    let unknown = aws("volume", "vol-nope");
    let (status, body) = f.get(&format!("/api/v1/graph/nodes/{unknown}")).await;
    let msg = assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(msg, format!("no node with crn {unknown}"));
    let (status, body) = f.get(&format!("/api/v1/graph/nodes/{unknown}/edges")).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, body) = f.get("/api/v1/graph/blast-radius/garbage").await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
}

#[tokio::test]
async fn a_nodes_edges_both_ways() {
    let f = Fixture::new(Estate::sample());
    let e = f.get_ok(&format!("/api/v1/graph/nodes/{}/edges", instance())).await;
    assert_eq!(e["crn"], instance());
    assert_eq!(
        e["outgoing"],
        json!([{"source_crn": instance(), "target_crn": sg(), "type": "SecuredBy", "inferred": false,
            "properties": {"relation": "SecuredBy"}}])
    );
    let mut incoming: Vec<(String, String)> = e["incoming"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["source_crn"].as_str().unwrap().to_owned(),
                x["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    incoming.sort();
    let mut want = vec![
        (subnet(), "Contains".to_owned()),
        (volume(), "AttachedTo".to_owned()),
        (POD.to_owned(), "Runs".to_owned()),
    ];
    want.sort();
    assert_eq!(incoming, want);
    assert_eq!((&e["incoming_total"], &e["truncated"]), (&json!(3), &json!(false)));
    let cut = f
        .get_ok(&format!("/api/v1/graph/nodes/{}/edges?limit=1", instance()))
        .await;
    assert_eq!(
        (cut["incoming"].as_array().unwrap().len(), &cut["truncated"]),
        (1, &json!(true))
    );
    let pod = f.get_ok(&format!("/api/v1/graph/nodes/{}/edges", enc(POD))).await;
    assert_eq!(strs(&pod["outgoing"], "target_crn"), vec![instance()]);
}

#[tokio::test]
async fn blast_radius_lists_dependents() {
    let f = Fixture::new(Estate::sample());
    let b = f.get_ok(&format!("/api/v1/graph/blast-radius/{}", vpc())).await;
    assert_eq!(
        (&b["crn"], &b["affected_count"], &b["max_depth"], &b["truncated"]),
        (&json!(vpc()), &json!(3), &json!(3), &json!(false))
    );
    assert_eq!(b["total_cost_usd_mo"], 70.5);
    let first = &b["affected"][0];
    assert_eq!(
        first,
        &json!({"crn": subnet(), "type": "ec2:subnet", "depth": 1, "via_crn": vpc(), "relation": "Contains", "cost_usd_mo": 0.0})
    );
    let mut crns = strs(&b["affected"], "crn");
    crns.sort();
    let mut want = vec![subnet(), instance(), POD.to_owned()];
    want.sort();
    assert_eq!(crns, want);
    let cut = f.get_ok(&format!("/api/v1/graph/blast-radius/{}?limit=1", vpc())).await;
    assert_eq!(
        (
            cut["affected"].as_array().unwrap().len(),
            &cut["affected_count"],
            &cut["truncated"]
        ),
        (1, &json!(3), &json!(true))
    );
    for q in ["limit=0", "limit=10001", "limit=x"] {
        let (status, body) = f.get(&format!("/api/v1/graph/blast-radius/{}?{q}", vpc())).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
    }
}

#[tokio::test]
async fn terminal_rows_page_like_nodes() {
    let f = Fixture::new(Estate::sample());
    let p1 = f.get_ok("/api/v1/nodes?limit=5").await;
    assert_eq!((p1["rows"].as_array().unwrap().len(), &p1["total"]), (5, &json!(9)));
    let c = p1["next_cursor"].as_str().unwrap();
    let p2 = f.get_ok(&format!("/api/v1/nodes?limit=5&cursor={c}")).await;
    assert_eq!(
        (p2["rows"].as_array().unwrap().len(), &p2["next_cursor"]),
        (4, &json!(""))
    );
    let row = p1["rows"][0].as_object().unwrap();
    let mut keys: Vec<&str> = row.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "category",
            "cost_usd_mo",
            "crn",
            "is_waste",
            "phase",
            "provider",
            "reachability",
            "region",
            "state",
            "type",
            "waste_reason"
        ]
    );
    let (status, body) = f.get("/api/v1/nodes?limit=10001").await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
}

/// The terminal UI's windows: a workspace, its filter, a sort order and
/// an offset, with every workspace's count.
#[tokio::test]
async fn terminal_rows_come_as_windows_of_a_workspace_in_order() {
    let f = Fixture::new(Estate::sample());
    let all = f.get_ok("/api/v1/nodes").await;
    assert_eq!(
        all["workspaces"],
        json!({"compute": 1, "storage": 1, "network": 3, "database": 1, "serverless": 1, "kubernetes": 1, "other": 1})
    );
    assert_eq!((&all["total"], &all["offset"]), (&json!(9), &json!(0)));
    let category_of = |crn: &str| -> String {
        let rows = all["rows"].as_array().unwrap();
        let row = rows.iter().find(|r| r["crn"] == crn).unwrap();
        row["category"].as_str().unwrap().to_owned()
    };
    assert_eq!(category_of(&db()), "database");
    assert_eq!(category_of(POD), "kubernetes");

    // Windows of two in cost order, descending: each row once, in order.
    let mut seen = Vec::new();
    for offset in (0..10).step_by(2) {
        let w = f
            .get_ok(&format!("/api/v1/nodes?sort=cost&order=desc&limit=2&offset={offset}"))
            .await;
        assert_eq!(
            (&w["offset"], &w["total"], &w["next_cursor"]),
            (&json!(offset), &json!(9), &json!(""))
        );
        seen.extend(w["rows"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(seen.len(), 9);
    let costs: Vec<f64> = seen.iter().map(|r| r["cost_usd_mo"].as_f64().unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "{costs:?}");
    assert_eq!(
        strs(&Value::Array(seen[..3].to_vec()), "crn"),
        vec![db(), instance(), volume()]
    );
    let unique: HashSet<String> = strs(&Value::Array(seen), "crn").into_iter().collect();
    assert_eq!(unique.len(), 9);
    let past = f.get_ok("/api/v1/nodes?sort=cost&offset=9").await;
    assert_eq!((past["rows"].as_array().unwrap().len(), &past["total"]), (0, &json!(9)));

    // One workspace by name, ascending and descending.
    let net = f.get_ok("/api/v1/nodes?category=network&sort=name").await;
    let names: Vec<String> = strs(&net["rows"], "crn")
        .iter()
        .map(|c| c.rsplit(':').next().unwrap().to_owned())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!((names.len(), &names, &net["total"]), (3, &sorted, &json!(3)));
    let back = f.get_ok("/api/v1/nodes?category=network&sort=name&order=desc").await;
    sorted.reverse();
    let names: Vec<String> = strs(&back["rows"], "crn")
        .iter()
        .map(|c| c.rsplit(':').next().unwrap().to_owned())
        .collect();
    assert_eq!(names, sorted);

    // A sorted window counts in its own pass when the counts are not kept
    // yet: the same counts, and rows, as when they are.
    let fresh = f.get_ok("/api/v1/nodes?sort=cost&order=desc&filter=avail").await;
    let kept = f.get_ok("/api/v1/nodes?sort=cost&order=desc&filter=avail").await;
    assert_eq!(
        (&fresh["workspaces"], &fresh["total"]),
        (&kept["workspaces"], &json!(3))
    );
    assert_eq!(fresh["rows"], kept["rows"]);
    assert_eq!(strs(&fresh["rows"], "crn")[0], db());

    // The filter: a column's prefix and a word; the counts follow it.
    let avail = f.get_ok("/api/v1/nodes?filter=STATE%3Aavail").await;
    assert_eq!(avail["total"], 3);
    assert_eq!(
        (
            &avail["workspaces"]["network"],
            &avail["workspaces"]["database"],
            &avail["workspaces"]["compute"]
        ),
        (&json!(2), &json!(1), &json!(0))
    );
    let word = f
        .get_ok("/api/v1/nodes?filter=state%3Aavail%20rds&category=database")
        .await;
    assert_eq!(strs(&word["rows"], "crn"), vec![db()]);
    let none = f.get_ok("/api/v1/nodes?filter=waste%3Ayes").await;
    assert_eq!(none["total"], 0);

    // Id order pages by cursor, also inside a workspace.
    let p1 = f.get_ok("/api/v1/nodes?category=network&limit=2").await;
    let c = p1["next_cursor"].as_str().unwrap();
    assert!(!c.is_empty());
    let p2 = f
        .get_ok(&format!("/api/v1/nodes?category=network&limit=2&cursor={c}"))
        .await;
    assert_eq!(
        (p2["rows"].as_array().unwrap().len(), &p2["next_cursor"]),
        (1, &json!(""))
    );

    for (q, says) in [
        ("filter=waste%3Amaybe", "waste takes yes or no"),
        ("sort=cost&cursor=AAAAAAAAAAE", "choose the page by offset"),
        ("offset=100000001", "over 100000000"),
        ("category=disks", "category"),
    ] {
        let (status, body) = f.get(&format!("/api/v1/nodes?{q}")).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
        assert!(body["error"]["message"].as_str().unwrap().contains(says), "{q}: {body}");
    }
}

#[tokio::test]
async fn flow_graph_keeps_edges_among_the_chosen_nodes() {
    let f = Fixture::new(Estate::sample());
    let g = f.get_ok("/api/v1/graph").await;
    assert_eq!(
        (
            g["nodes"].as_array().unwrap().len(),
            g["edges"].as_array().unwrap().len()
        ),
        (9, 6)
    );
    assert_eq!((&g["truncated"], &g["total_nodes"]), (&json!(false), &json!(9)));
    let vol = g["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == volume())
        .unwrap();
    assert_eq!(
        vol,
        &json!({"id": volume(), "label": "vol-1", "type": "ec2:volume", "provider": "aws",
            "data": {"cost_usd_mo": 40.1, "state": "in-use", "is_waste": false}})
    );
    let ids: HashSet<&str> = g["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 6, "edge ids are unique");
    // Cut at 3 nodes: every listed edge joins two listed nodes, and the
    // neighbourhood walk keeps some.
    let cut = f.get_ok("/api/v1/graph?limit=3").await;
    let chosen: HashSet<String> = strs(&cut["nodes"], "id").into_iter().collect();
    assert_eq!((chosen.len(), &cut["truncated"]), (3, &json!(true)));
    for e in cut["edges"].as_array().unwrap() {
        assert!(chosen.contains(e["source"].as_str().unwrap()) && chosen.contains(e["target"].as_str().unwrap()));
    }
    let (status, body) = f.get("/api/v1/graph?limit=20001").await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
}

#[tokio::test]
async fn graph_topology_places_nodes_in_clusters() {
    let f = Fixture::new(Estate::sample());
    let t = f.get_ok("/api/v1/graph/topology").await;
    let clusters: Vec<(String, u64)> = t["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["node_count"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        clusters,
        vec![
            ("aws/123456789012/global".to_owned(), 1),
            ("aws/123456789012/us-east-1".to_owned(), 7),
            ("kubernetes/prod-cluster/us-east-1".to_owned(), 1),
        ]
    );
    let nodes = t["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 9);
    let positions: HashSet<(i64, i64)> = nodes
        .iter()
        .map(|n| (n["x"].as_f64().unwrap() as i64, n["y"].as_f64().unwrap() as i64))
        .collect();
    assert_eq!(positions.len(), 9, "no two nodes share a position");
    let pod = nodes.iter().find(|n| n["crn"] == POD).unwrap();
    assert_eq!(
        (&pod["cluster"], &pod["provider"], &pod["type"]),
        (
            &json!("kubernetes/prod-cluster/us-east-1"),
            &json!("kubernetes"),
            &json!("core:pod")
        )
    );
    assert_eq!(t["edges"].as_array().unwrap().len(), 6);
    assert!(
        t["edges"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["source"].is_string() && e["target"].is_string() && e["type"].is_string())
    );
    // Deterministic.
    assert_eq!(f.get_ok("/api/v1/graph/topology").await, t);
}

/// The canonical text of a node object, field by field, as documented.
fn canonical_node(n: &Value) -> String {
    let flagged: Vec<String> = n["heuristics_flagged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| format!("{{\"rule_name\":{},\"severity\":{}}}", h["rule_name"], h["severity"]))
        .collect();
    let p = &n["provenance"];
    format!(
        "{{\"crn\":{},\"type\":{},\"state\":{},\"cost_usd_mo\":{},\"heuristics_flagged\":[{}],\"provenance\":{{\"commit\":{},\"author\":{},\"file\":{},\"line\":{}}}}}",
        n["crn"],
        n["type"],
        n["state"],
        n["cost_usd_mo"],
        flagged.join(","),
        p["commit"],
        p["author"],
        p["file"],
        p["line"]
    )
}

fn canonical_edge(e: &Value) -> String {
    format!(
        "{{\"source_crn\":{},\"target_crn\":{},\"type\":{}}}",
        e["source_crn"], e["target_crn"], e["type"]
    )
}

async fn topology(f: &Fixture) -> (Value, Vec<u8>) {
    let (status, bytes) = f.call("GET", "/api/v1/topology", Some(TOKEN), None).await;
    assert_eq!(status, StatusCode::OK);
    (serde_json::from_slice(&bytes).unwrap(), bytes)
}

#[tokio::test]
async fn topology_has_the_spec_shape_and_a_verifiable_checksum() {
    let f = Fixture::new(Estate::sample());
    let (t, raw) = topology(&f).await;
    let mut keys: Vec<&String> = t.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["checksum_sha256", "edges", "meta", "nodes", "topology_version"]);
    // The hand-written body is exactly the declared type, no field more or less.
    let typed: svc_api::routes::graph::Topology = serde_json::from_slice(&raw).unwrap();
    assert_eq!((typed.nodes.len(), typed.edges.len()), (9, 6));
    let version = t["topology_version"].as_str().unwrap();
    assert!(
        version.starts_with('v') && version[1..].parse::<u64>().is_ok(),
        "{version}"
    );
    assert_eq!(
        t["meta"],
        json!({"total_nodes": 9, "total_edges": 6, "waste_identified_usd_mo": 0.0})
    );
    let nodes = t["nodes"].as_array().unwrap();
    let edges = t["edges"].as_array().unwrap();
    assert_eq!((nodes.len(), edges.len()), (9, 6));
    let vol = nodes.iter().find(|n| n["crn"] == volume()).unwrap();
    assert_eq!(
        vol,
        &json!({"crn": volume(), "type": "ec2:volume", "state": "in-use", "cost_usd_mo": 40.1, "heuristics_flagged": [],
            "provenance": {"commit": "", "author": "", "file": "", "line": 0}})
    );
    // Sorted by CRN, edges by (source, target, type).
    let crns = strs(&t["nodes"], "crn");
    let mut sorted = crns.clone();
    sorted.sort();
    assert_eq!(crns, sorted);
    let keys: Vec<(String, String, String)> = edges
        .iter()
        .map(|e| {
            (
                e["source_crn"].as_str().unwrap().into(),
                e["target_crn"].as_str().unwrap().into(),
                e["type"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    // The checksum covers the arrays' elements, comma-separated as in the
    // body, with a newline between the arrays.
    let node_text: Vec<String> = nodes.iter().map(canonical_node).collect();
    let edge_text: Vec<String> = edges.iter().map(canonical_edge).collect();
    let (node_text, edge_text) = (node_text.join(","), edge_text.join(","));
    let raw_text = String::from_utf8(raw.clone()).unwrap();
    assert!(
        raw_text.contains(&format!("\"nodes\":[{node_text}],\"edges\":[{edge_text}],")),
        "{raw_text}"
    );
    let mut h = Sha256::new();
    h.update(node_text.as_bytes());
    h.update(b"\n");
    h.update(edge_text.as_bytes());
    assert_eq!(t["checksum_sha256"], hex::encode(h.finalize()));
    assert!(raw.ends_with(format!("\"checksum_sha256\":\"{}\"}}", t["checksum_sha256"].as_str().unwrap()).as_bytes()));
}

#[tokio::test]
async fn topology_checksum_is_stable_and_equal_for_identical_graphs() {
    let a = Fixture::new(Estate::sample());
    let b = Fixture::new(Estate::sample());
    let (ta, raw_a) = topology(&a).await;
    let (ta2, raw_a2) = topology(&a).await;
    let (tb, _) = topology(&b).await;
    assert_eq!(raw_a, raw_a2, "two calls give the same body");
    assert_eq!(ta["checksum_sha256"], ta2["checksum_sha256"]);
    assert_eq!(
        ta["checksum_sha256"], tb["checksum_sha256"],
        "identical graphs, identical checksum"
    );
    assert_eq!(ta["checksum_sha256"].as_str().unwrap().len(), 64);
    // A change moves the checksum and the version.
    a.rescan(|e| {
        e.node(&instance(), "stopped", 70.0);
    });
    let (tc, _) = topology(&a).await;
    assert_ne!(tc["checksum_sha256"], ta["checksum_sha256"]);
    assert_ne!(tc["topology_version"], ta["topology_version"]);
    // Removing a node drops it and its edges.
    a.rescan(|e| {
        e.remove(&function());
    });
    let (td, _) = topology(&a).await;
    assert_eq!(td["meta"]["total_nodes"], 8);
    assert_eq!(td["meta"]["total_edges"], 5);
}

#[tokio::test]
async fn a_large_topology_streams_in_many_chunks() {
    let mut estate = Estate::default();
    for i in 0..3000 {
        estate.node(&aws("volume", &format!("vol-{i:05}")), "available", 1.0);
        if i > 0 {
            estate.edge(
                &aws("volume", &format!("vol-{i:05}")),
                &aws("volume", &format!("vol-{:05}", i - 1)),
                svc_engine::Relation::Uses,
            );
        }
    }
    let f = Fixture::new(estate);
    let (t, raw) = topology(&f).await;
    assert!(
        raw.len() > 512 * 1024,
        "body of {} bytes spans several chunks",
        raw.len()
    );
    assert_eq!(
        (
            t["nodes"].as_array().unwrap().len(),
            t["edges"].as_array().unwrap().len()
        ),
        (3000, 2999)
    );
    assert_eq!(t["nodes"][0]["crn"], aws("volume", "vol-00000"));
    assert_eq!(t["edges"][0]["source_crn"], aws("volume", "vol-00001"));
}

#[tokio::test]
async fn an_empty_graph_has_an_empty_topology() {
    let f = Fixture::new(Estate::default());
    let (t, _) = topology(&f).await;
    assert_eq!((&t["nodes"], &t["edges"]), (&json!([]), &json!([])));
    assert_eq!(
        t["meta"],
        json!({"total_nodes": 0, "total_edges": 0, "waste_identified_usd_mo": 0.0})
    );
    assert_eq!(t["checksum_sha256"], hex::encode(Sha256::digest(b"\n")));
    let s = f.get_ok("/api/v1/graph/stats").await;
    assert_eq!((&s["total_nodes"], &s["providers"]), (&json!(0), &json!({})));
    let g = f.get_ok("/api/v1/graph/topology").await;
    assert_eq!(
        (&g["nodes"], &g["clusters"], &g["truncated"]),
        (&json!([]), &json!([]), &json!(false))
    );
}

/// What goes into the ledger prints as what it says: an actor or a reason
/// with a control or bidirectional-override character, or longer than its
/// limit, is refused before anything is decided.
#[tokio::test]
async fn actors_and_reasons_are_printable_text() {
    let f = Fixture::new(Estate::sample());
    let post = |uri: &'static str, body: Value| {
        let req = axum::http::Request::builder()
            .method("POST")
            .uri(uri)
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        let app = f.app.clone();
        async move {
            let resp = tower::ServiceExt::oneshot(app, req).await.unwrap();
            let status = resp.status();
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .unwrap()
                .to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let crn = "crn:svc:aws:us-east-1:ec2:volume:111111111111:vol-1";
    let long = "a".repeat(129);
    for (body, field) in [
        (
            json!({"crn": crn, "ttl_seconds": 60, "reason_code": "x", "actor": "alice\u{1b}[31m\nAPPROVED BY: bob"}),
            "actor",
        ),
        (
            json!({"crn": crn, "ttl_seconds": 60, "reason_code": "x", "actor": long}),
            "actor",
        ),
        (
            json!({"crn": crn, "ttl_seconds": 60, "reason_code": "ok\u{202e}txt.exe", "actor": "alice"}),
            "reason_code",
        ),
        (
            json!({"crn": crn, "ttl_seconds": 60, "reason_code": "r".repeat(1025), "actor": "alice"}),
            "reason_code",
        ),
    ] {
        let (status, answer) = post("/api/v1/isolation", body).await;
        let message = assert_error(status, &answer, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
        assert!(message.starts_with(field), "{message}");
    }
    let reject = json!({"crn": crn, "plan_hash": "h", "actor": "alice", "reason": "see \u{2066}ticket"});
    let (status, answer) = post("/api/v1/remediation/reject", reject).await;
    let message = assert_error(status, &answer, StatusCode::UNPROCESSABLE_ENTITY, "invalid");
    assert!(message.contains("U+2066"), "{message}");
}

/// Each filter of `graph/nodes`, alone and combined, lists exactly the nodes
/// that a client filtering the whole list would keep, and counts them.
#[tokio::test]
async fn node_filters_combine_and_count_what_matches() {
    let f = Fixture::new(Estate::sample());
    let all = f.get_ok("/api/v1/graph/nodes?limit=1000").await["nodes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(all.len(), 9);
    let instance_type = all.iter().find(|n| n["crn"] == instance()).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_owned();
    type Keep = Box<dyn Fn(&Value) -> bool>;
    let cases: Vec<(String, Keep)> = vec![
        (format!("type={instance_type}"), {
            let t = instance_type.clone();
            Box::new(move |n: &Value| n["type"] == t.as_str())
        }),
        (
            "state=available".into(),
            Box::new(|n: &Value| n["state"] == "available"),
        ),
        (
            "provider=kubernetes".into(),
            Box::new(|n: &Value| n["provider"] == "kubernetes"),
        ),
        (
            "provider=aws&state=available".into(),
            Box::new(|n: &Value| n["provider"] == "aws" && n["state"] == "available"),
        ),
        (
            "q=VOL-1".into(),
            Box::new(|n: &Value| n["crn"].as_str().unwrap().contains("vol-1")),
        ),
        (
            "q=%3Arole%3A".into(),
            Box::new(|n: &Value| n["crn"].as_str().unwrap().contains(":role:")),
        ),
        ("waste=false".into(), Box::new(|n: &Value| n["is_waste"] == false)),
        ("waste=true".into(), Box::new(|n: &Value| n["is_waste"] == true)),
        ("type=no:such-type".into(), Box::new(|_: &Value| false)),
        ("tag=no-such-tag".into(), Box::new(|_: &Value| false)),
        ("tag=env".into(), Box::new(|n: &Value| n["tags"].get("env").is_some())),
        (
            "tag=env%3Dprod".into(),
            Box::new(|n: &Value| n["tags"]["env"] == "prod"),
        ),
        (
            "q=env%3Dprod".into(),
            Box::new(|n: &Value| n["tags"]["env"] == "prod" || n["crn"].as_str().unwrap().contains("env=prod")),
        ),
        ("state=%20%20".into(), Box::new(|_: &Value| true)),
    ];
    for (query, keep) in cases {
        let want: HashSet<String> = all
            .iter()
            .filter(|n| keep(n))
            .map(|n| n["crn"].as_str().unwrap().to_owned())
            .collect();
        // Pages of two, followed to the end: every match once.
        let mut got = HashSet::new();
        let mut cursor = String::new();
        loop {
            let after = if cursor.is_empty() {
                String::new()
            } else {
                format!("&cursor={cursor}")
            };
            let page = f.get_ok(&format!("/api/v1/graph/nodes?limit=2&{query}{after}")).await;
            assert_eq!(page["total"], want.len(), "{query}: {page}");
            for n in page["nodes"].as_array().unwrap() {
                assert!(got.insert(n["crn"].as_str().unwrap().to_owned()), "{query}: twice");
            }
            cursor = page["next_cursor"].as_str().unwrap().to_owned();
            if cursor.is_empty() {
                break;
            }
        }
        assert_eq!(got, want, "{query}");
    }
    let (status, bytes) = f
        .call("GET", "/api/v1/graph/nodes?waste=maybe", Some(TOKEN), None)
        .await;
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
}

/// The groups of every breakdown add up to the graph's stats; a limit
/// moves the cheapest groups into `rest` without losing any of them.
#[tokio::test]
async fn breakdowns_add_up_to_the_stats() {
    let f = Fixture::new(Estate::sample());
    let stats = f.get_ok("/api/v1/graph/stats").await;
    for by in ["provider", "account", "region", "type"] {
        let b = f.get_ok(&format!("/api/v1/graph/breakdown?by={by}&limit=1000")).await;
        assert_eq!(b["by"], by);
        let groups = b["groups"].as_array().unwrap();
        assert_eq!(b["total_groups"], groups.len());
        assert!(b["rest"].is_null(), "{b}");
        let nodes: u64 = groups.iter().map(|g| g["nodes"].as_u64().unwrap()).sum();
        let cost: f64 = groups.iter().map(|g| g["cost_usd_mo"].as_f64().unwrap()).sum();
        assert_eq!(nodes, stats["active_nodes"].as_u64().unwrap(), "{by}");
        assert!(
            (cost - stats["total_cost_usd_mo"].as_f64().unwrap()).abs() < 0.01 * groups.len() as f64,
            "{by}: {cost} vs {stats}"
        );
        let costs: Vec<f64> = groups.iter().map(|g| g["cost_usd_mo"].as_f64().unwrap()).collect();
        assert!(
            costs.windows(2).all(|w| w[0] >= w[1]),
            "{by}: costliest first: {costs:?}"
        );

        let one = f.get_ok(&format!("/api/v1/graph/breakdown?by={by}&limit=1")).await;
        assert_eq!(one["groups"].as_array().unwrap().len(), 1);
        assert_eq!(one["groups"][0], groups[0]);
        if groups.len() > 1 {
            assert_eq!(one["rest"]["groups"], groups.len() - 1, "{one}");
            assert_eq!(
                one["rest"]["nodes"].as_u64().unwrap() + groups[0]["nodes"].as_u64().unwrap(),
                nodes
            );
        } else {
            assert!(one["rest"].is_null());
        }
    }
    let providers = f.get_ok("/api/v1/graph/breakdown").await;
    assert_eq!(providers["by"], "provider", "provider is the default");
    let keys: HashSet<&str> = providers["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, HashSet::from(["aws", "kubernetes"]));
    let (status, bytes) = f
        .call("GET", "/api/v1/graph/breakdown?by=colour", Some(TOKEN), None)
        .await;
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
}

//! The binary graph form (SPEC 2.4) of the topology endpoints through the
//! real router: asked for with `Accept: application/x-flatbuffers`, it
//! verifies, and says what the JSON form says; without the header the
//! JSON form is served.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod graph_fixture;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use axum::http::StatusCode;
use graph_fixture::*;
use serde_json::{Value, json};
use svc_api::fbs::{EdgeRelationship, FbGraph, FbNode, MEDIA_TYPE, decode_graph, verified_root};
use svc_api::routes::graph::layout::LAYOUT_KEYS;

const FB: Option<&str> = Some("application/json;q=0.5, application/x-flatbuffers");

/// The binary answer of `uri`, checked for its content type and decoded
/// through the verifier.
async fn binary(f: &Fixture, uri: &str) -> (FbGraph, Vec<u8>) {
    let (status, headers, bytes) = f.get_accepting(uri, FB).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&bytes));
    assert_eq!(headers["content-type"], MEDIA_TYPE, "{uri}");
    assert_eq!(headers["vary"], "accept", "{uri}");
    assert!(
        svc_api::fbs::graph_buffer_has_identifier(&bytes),
        "{uri}: file identifier SVCG"
    );
    (decode_graph(&bytes).unwrap(), bytes)
}

fn prop<'a>(n: &'a FbNode, key: &str) -> &'a str {
    n.properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{} has no property {key}", n.crn))
}

fn relation_name(r: u8) -> &'static str {
    EdgeRelationship(r).variant_name().unwrap()
}

fn edge_set(g: &FbGraph) -> BTreeSet<(String, String, String)> {
    g.edges
        .iter()
        .map(|e| {
            (
                e.source_crn.clone(),
                e.target_crn.clone(),
                relation_name(e.relationship).to_owned(),
            )
        })
        .collect()
}

fn json_edge_set(edges: &Value, source: &str, target: &str) -> BTreeSet<(String, String, String)> {
    edges
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e[source].as_str().unwrap().to_owned(),
                e[target].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_laid_out_graph_in_binary_matches_the_json() {
    let f = Fixture::new(Estate::sample());
    let (g, raw) = binary(&f, "/api/v1/graph/topology").await;
    let layout = f.get_ok("/api/v1/graph/topology").await;
    let flow = f.get_ok("/api/v1/graph").await;

    // Same nodes, in CRN order (the table key), with the JSON's positions,
    // clusters and fields.
    let crns: Vec<&str> = g.nodes.iter().map(|n| n.crn.as_str()).collect();
    let mut sorted = crns.clone();
    sorted.sort_unstable();
    assert_eq!(crns, sorted);
    let json_nodes: HashMap<&str, &Value> = layout["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["crn"].as_str().unwrap(), n))
        .collect();
    let flow_nodes: HashMap<&str, &Value> = flow["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    assert_eq!(g.nodes.len(), 9);
    assert_eq!(
        crns.iter().copied().collect::<BTreeSet<_>>(),
        json_nodes.keys().copied().collect::<BTreeSet<_>>()
    );
    for n in &g.nodes {
        let keys: Vec<&str> = n.properties.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, LAYOUT_KEYS, "{}", n.crn);
        let j = json_nodes[n.crn.as_str()];
        let fl = flow_nodes[n.crn.as_str()];
        assert_eq!(
            prop(n, "x").parse::<f64>().unwrap(),
            j["x"].as_f64().unwrap(),
            "{}",
            n.crn
        );
        assert_eq!(
            prop(n, "y").parse::<f64>().unwrap(),
            j["y"].as_f64().unwrap(),
            "{}",
            n.crn
        );
        assert_eq!(prop(n, "cluster"), j["cluster"], "{}", n.crn);
        assert_eq!(prop(n, "provider"), j["provider"], "{}", n.crn);
        assert_eq!(n.ty, j["type"].as_str().unwrap());
        assert_eq!(prop(n, "label"), fl["label"], "{}", n.crn);
        assert_eq!(prop(n, "waste"), fl["data"]["is_waste"].to_string(), "{}", n.crn);
        assert_eq!(n.state, fl["data"]["state"].as_str().unwrap());
        assert_eq!(
            f64::from(n.cost_usd_mo) as f32,
            fl["data"]["cost_usd_mo"].as_f64().unwrap() as f32
        );
        assert_eq!(n.valid_to, 0);
    }
    let vol = g.nodes.iter().find(|n| n.crn == volume()).unwrap();
    assert_eq!((vol.state.as_str(), vol.cost_usd_mo), ("in-use", 40.1));
    let one = f.get_ok(&format!("/api/v1/graph/nodes/{}", urlencode(&volume()))).await;
    assert_eq!(json!(vol.creation_timestamp), one["creation_timestamp"]);
    // Same edges.
    assert_eq!(g.edges.len(), 6);
    assert_eq!(edge_set(&g), json_edge_set(&layout["edges"], "source", "target"));
    // The graph generation and the last commit.
    let (_, topo) = f.get("/api/v1/topology").await;
    assert_eq!(format!("v{}", g.version), topo["topology_version"].as_str().unwrap());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(g.last_updated > 0 && g.last_updated <= now, "{}", g.last_updated);
    // Both views answer the same binary body; each node's cluster is one
    // of those `clusters_only` lists.
    let (_, flow_raw) = binary(&f, "/api/v1/graph").await;
    assert_eq!(raw, flow_raw);
    let clusters = f.get_ok("/api/v1/graph/topology?clusters_only=true").await;
    assert_eq!((&clusters["nodes"], &clusters["edges"]), (&json!([]), &json!([])));
    assert_eq!(clusters["clusters"], layout["clusters"]);
    let ids: BTreeSet<&str> = clusters["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let used: BTreeSet<&str> = g.nodes.iter().map(|n| prop(n, "cluster")).collect();
    assert_eq!(ids, used);
    // `clusters_only` answers JSON even when binary is accepted.
    let (status, headers, _) = f.get_accepting("/api/v1/graph/topology?clusters_only=true", FB).await;
    assert_eq!(
        (status, &headers["content-type"]),
        (StatusCode::OK, &"application/json".parse().unwrap())
    );
    // A key lookup finds every node.
    let root = verified_root(&raw).unwrap();
    let list = root.nodes().unwrap();
    for n in &g.nodes {
        let found = list
            .lookup_by_key(n.crn.as_str(), |node, key| node.key_compare_with_value(key))
            .unwrap();
        assert_eq!(found.type_(), n.ty);
    }
}

fn urlencode(crn: &str) -> String {
    crn.replace('/', "%2F")
}

#[tokio::test]
async fn without_the_accept_header_json_is_served() {
    let f = Fixture::new(Estate::sample());
    for uri in ["/api/v1/graph", "/api/v1/graph/topology", "/api/v1/topology"] {
        for accept in [
            None,
            Some("application/json"),
            Some("*/*"),
            Some("application/x-flatbuffers;q=0, application/json"),
        ] {
            let (status, headers, bytes) = f.get_accepting(uri, accept).await;
            assert_eq!(status, StatusCode::OK, "{uri} {accept:?}");
            assert_eq!(headers["content-type"], "application/json", "{uri} {accept:?}");
            assert_eq!(headers["vary"], "accept", "{uri} {accept:?}");
            let body: Value = serde_json::from_slice(&bytes).unwrap();
            assert!(body["nodes"].is_array(), "{uri} {accept:?}");
        }
    }
}

#[tokio::test]
async fn the_binary_views_take_a_larger_limit() {
    let mut estate = Estate::default();
    for i in 0..30 {
        estate.node(&aws("volume", &format!("vol-{i:03}")), "available", 1.0);
    }
    let f = Fixture::new(estate);
    let (g, _) = binary(&f, "/api/v1/graph/topology?limit=3").await;
    assert_eq!(g.nodes.len(), 3);
    let (g, _) = binary(&f, "/api/v1/graph").await;
    assert_eq!(g.nodes.len(), 30);
    // Above the JSON maximum: refused in JSON, taken in binary and for
    // clusters alone; above the binary maximum: refused everywhere.
    for uri in ["/api/v1/graph?limit=20001", "/api/v1/graph/topology?limit=20001"] {
        let (status, body) = f.get(uri).await;
        let message = assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
        assert!(message.contains("20000"), "{message}");
        let (g, _) = binary(&f, uri).await;
        assert_eq!(g.nodes.len(), 30);
    }
    let c = f.get_ok("/api/v1/graph/topology?limit=250000&clusters_only").await;
    assert_eq!(c["clusters"][0]["node_count"], 30);
    for uri in [
        "/api/v1/graph?limit=250001",
        "/api/v1/graph/topology?limit=250001",
        "/api/v1/graph/topology?limit=0",
    ] {
        for accept in [None, FB] {
            let (status, _, body) = f.get_accepting(uri, accept).await;
            let body: Value = serde_json::from_slice(&body).unwrap();
            assert_error(status, &body, StatusCode::BAD_REQUEST, "bad_request");
        }
    }
}

#[tokio::test]
async fn the_whole_topology_in_binary_matches_the_json() {
    // The sample estate, and unattached volumes a built-in rule flags.
    let mut estate = Estate::sample();
    for i in 0..3 {
        estate.node(&aws("volume", &format!("vol-idle-{i}")), "available", 12.5);
    }
    let f = Fixture::new(estate);
    let (g, _) = binary(&f, "/api/v1/topology").await;
    let (status, t) = f.get("/api/v1/topology").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(format!("v{}", g.version), t["topology_version"].as_str().unwrap());
    assert!(g.last_updated > 0);
    let nodes = t["nodes"].as_array().unwrap();
    assert_eq!(g.nodes.len(), nodes.len());
    assert_eq!(g.nodes.len(), 12);
    let mut flagged = 0;
    for (n, j) in g.nodes.iter().zip(nodes) {
        assert_eq!(n.crn, j["crn"].as_str().unwrap());
        assert_eq!(n.ty, j["type"].as_str().unwrap());
        assert_eq!(n.state, j["state"].as_str().unwrap());
        assert_eq!(n.cost_usd_mo, j["cost_usd_mo"].as_f64().unwrap() as f32, "{}", n.crn);
        assert_eq!(n.valid_to, 0);
        let props: BTreeMap<&str, &str> = n.properties.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let want: BTreeMap<&str, String> = j["heuristics_flagged"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| {
                [
                    ("rule_name", h["rule_name"].as_str().unwrap().to_owned()),
                    ("severity", h["severity"].to_string()),
                ]
            })
            .collect();
        let want: BTreeMap<&str, &str> = want.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(props, want, "{}", n.crn);
        flagged += usize::from(!want.is_empty());
    }
    assert!(flagged >= 3, "the idle volumes carry their finding ({flagged} flagged)");
    // Edges in the JSON's order.
    let edges: Vec<(String, String, String)> = g
        .edges
        .iter()
        .map(|e| {
            (
                e.source_crn.clone(),
                e.target_crn.clone(),
                relation_name(e.relationship).to_owned(),
            )
        })
        .collect();
    let json_edges: Vec<(String, String, String)> = t["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["source_crn"].as_str().unwrap().to_owned(),
                e["target_crn"].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(edges, json_edges);
    assert_eq!(edges.len(), 6);
    // Creation times as the node objects give them.
    for n in &g.nodes {
        let one = f.get_ok(&format!("/api/v1/graph/nodes/{}", urlencode(&n.crn))).await;
        assert_eq!(json!(n.creation_timestamp), one["creation_timestamp"], "{}", n.crn);
    }
}

#[tokio::test]
async fn an_empty_graph_has_an_empty_binary_topology() {
    let f = Fixture::new(Estate::default());
    for uri in ["/api/v1/topology", "/api/v1/graph/topology", "/api/v1/graph"] {
        let (g, _) = binary(&f, uri).await;
        assert!(g.nodes.is_empty() && g.edges.is_empty(), "{uri}");
    }
}

//! The REST API of a running daemon, endpoint by endpoint, through a real
//! HTTP client: shapes, consistency between endpoints, paging, every error
//! and the daemon still serving afterwards.
//!
//! One daemon (a small mock estate) serves every test but the conflict
//! test. Tests that only read take the shared lock together; a test that
//! scans or appends to the ledger takes it alone, so readers never see the
//! graph change between two calls.

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use common::{Api, Daemon, Shared, Ws, encode_segment, raw_array_elements, sha256_hex};
use serde_json::{Value, json};
use tokio::sync::{OnceCell, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Mock estate size of the shared daemon.
const SCALE: usize = 1500;
/// Mock estate size of the daemon whose scans must last long enough to be
/// seen running.
const LONG_SCAN_SCALE: usize = 30_000;

static SHARED: OnceCell<Shared> = OnceCell::const_new();
static LOCK: RwLock<()> = RwLock::const_new(());

async fn daemon() -> &'static Daemon {
    &SHARED.get_or_init(|| Shared::start(SCALE)).await.daemon
}

/// The shared daemon for a test that only reads.
async fn reader() -> (RwLockReadGuard<'static, ()>, &'static Daemon) {
    let d = daemon().await;
    (LOCK.read().await, d)
}

/// The shared daemon for a test that scans or writes to the ledger.
async fn writer() -> (RwLockWriteGuard<'static, ()>, &'static Daemon) {
    let d = daemon().await;
    (LOCK.write().await, d)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn arr(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

fn is_rfc3339(t: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(t).is_ok()
}

/// Microseconds since the epoch of an RFC 3339 time.
fn micros(t: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(t)
        .unwrap_or_else(|e| panic!("not RFC 3339 ({e}): {t}"))
        .timestamp_micros()
}

/// The CRN without its `svc` segment.
fn without_ns(crn: &str) -> String {
    format!(
        "crn:{}",
        crn.strip_prefix("crn:svc:")
            .unwrap_or_else(|| panic!("crn without svc segment: {crn}"))
    )
}

const NODE_FIELDS: [&str; 21] = [
    "crn",
    "type",
    "provider",
    "region",
    "service",
    "kind",
    "account",
    "physical_id",
    "state",
    "cost_usd_mo",
    "tags",
    "properties",
    "creation_timestamp",
    "valid_from",
    "valid_to",
    "is_waste",
    "waste_reason",
    "risk_score",
    "reachability",
    "phase",
    "verdict",
];

const RELATIONS: [&str; 7] = [
    "AttachedTo",
    "SecuredBy",
    "Contains",
    "Runs",
    "FlowsTo",
    "Grants",
    "Uses",
];

/// Checks the node object's fields and their agreement with its CRN.
#[track_caller]
fn check_node(n: &Value) {
    for k in NODE_FIELDS {
        assert!(n.get(k).is_some(), "node lacks {k}: {n}");
    }
    let crn = s(&n["crn"]);
    let expect = format!(
        "crn:svc:{}:{}:{}:{}:{}:{}",
        s(&n["provider"]),
        s(&n["region"]),
        s(&n["service"]),
        s(&n["kind"]),
        s(&n["account"]),
        s(&n["physical_id"])
    );
    assert_eq!(crn, expect, "crn is built from the node's segments");
    assert_eq!(
        s(&n["type"]),
        format!("{}:{}", s(&n["service"]), s(&n["kind"])),
        "type is service:kind"
    );
    assert!(f(&n["cost_usd_mo"]) >= 0.0, "cost: {n}");
    assert!(
        n["tags"].is_object() && n["properties"].is_object(),
        "tags and properties are objects: {n}"
    );
    assert!(n["is_waste"].is_boolean(), "is_waste: {n}");
    assert!(
        ["reachable", "unreachable", "unknown"].contains(&s(&n["reachability"])),
        "reachability: {n}"
    );
    let risk = f(&n["risk_score"]);
    assert!((0.0..=100.0).contains(&risk), "risk_score: {n}");
    assert!(
        u(&n["valid_from"]) > 1_600_000_000_000_000,
        "valid_from in microseconds: {n}"
    );
    u(&n["valid_to"]);
    u(&n["creation_timestamp"]);
}

/// Which end of an edge is removed and which is affected, per the blast
/// radius direction of ARCHITECTURE.md.
fn removal(edge: &Value) -> (String, String) {
    let (src, dst) = (s(&edge["source_crn"]).to_owned(), s(&edge["target_crn"]).to_owned());
    match s(&edge["type"]) {
        "AttachedTo" | "Contains" | "Grants" => (src, dst),
        _ => (dst, src),
    }
}

#[test]
fn the_listen_line_is_parsed_from_text_and_json_logs() {
    let text = "2026-11-21T08:00:00Z  INFO svc::daemon: svc listening on http://127.0.0.1:41234 addr=127.0.0.1:41234";
    assert_eq!(
        common::parse_listen_line(text),
        Some("127.0.0.1:41234".parse().unwrap())
    );
    let json = r#"{"level":"INFO","fields":{"message":"svc listening on http://127.0.0.1:5","addr":"x"}}"#;
    assert_eq!(common::parse_listen_line(json), Some("127.0.0.1:5".parse().unwrap()));
    assert_eq!(common::parse_listen_line("listening on nothing"), None);
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        sha256_hex(&[b'a'; 1000]),
        "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
    );
}

#[tokio::test]
async fn json_logs_announce_the_address_too() {
    let dir = common::data_dir();
    let mut d = Daemon::configure(dir.path(), 300);
    d.json_logs = true;
    d.launch().await;
    d.api().get_ok("/api/v1/graph/stats").await;
    let log = d.log.text();
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| l.strip_prefix("out| "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("log line is not JSON ({e}): {l}")))
        .collect();
    assert!(!lines.is_empty(), "the daemon logged:\n{log}");
    let announce = format!("listening on http://{}", d.addr);
    assert!(log.contains(&announce), "a JSON line announces {announce}:\n{log}");
    for l in &lines {
        assert!(l["level"].is_string(), "every line has a level: {l}");
    }
}

#[tokio::test]
async fn probes_answer_and_everything_else_needs_the_token() {
    let (_g, d) = reader().await;
    let anon = d.anonymous();
    let r = anon.get("/healthz").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = anon.get("/readyz").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = anon.get("/metrics").await;
    assert_eq!(r.status, 200, "metrics are open: {}", r.text);

    anon.get("/api/v1/graph/stats").await.expect_error(401, "unauthorized");
    let wrong = d.api().with_token(Some(&"0".repeat(64)));
    wrong.get("/api/v1/graph/stats").await.expect_error(401, "unauthorized");
    d.api()
        .with_token(Some("short"))
        .get("/api/v1/graph/stats")
        .await
        .expect_error(401, "unauthorized");
    anon.get("/api/v1/history").await.expect_error(401, "unauthorized");
    anon.post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect_error(401, "unauthorized");

    for token in [None, Some("0".repeat(64))] {
        match Ws::connect(&d.ws_url(), token.as_deref()).await {
            Ok(_) => panic!("websocket handshake with token {token:?} was accepted"),
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                assert_eq!(resp.status().as_u16(), 401, "websocket handshake with token {token:?}");
            }
            Err(e) => panic!("websocket handshake with token {token:?} failed without an HTTP answer: {e}"),
        }
    }
    // The right token opens the stream.
    let mut ws = d.ws().await;
    ws.send_since(0).await;
    let first = ws.next(common::SCAN_DEADLINE).await;
    assert_eq!(first["seq"], 1, "replay starts at the first event: {first}");
    ws.close().await;

    d.api().get_ok("/api/v1/graph/stats").await;
}

#[tokio::test]
async fn topology_has_the_spec_fields_and_a_stable_checksum() {
    let (_g, d) = reader().await;
    let api = d.api();
    let first = api.get("/api/v1/topology").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let t = &first.json;
    let version = s(&t["topology_version"]);
    assert!(
        version.len() > 1 && version.starts_with('v') && version[1..].bytes().all(|b| b.is_ascii_digit()),
        "topology_version is v<N>: {version}"
    );
    let checksum = s(&t["checksum_sha256"]);
    assert!(
        checksum.len() == 64 && checksum.bytes().all(|b| b.is_ascii_hexdigit()),
        "checksum: {checksum}"
    );

    let nodes = arr(&t["nodes"]);
    let edges = arr(&t["edges"]);
    let stats = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(u(&t["meta"]["total_nodes"]), nodes.len() as u64, "meta.total_nodes");
    assert_eq!(u(&t["meta"]["total_edges"]), edges.len() as u64, "meta.total_edges");
    assert_eq!(
        nodes.len() as u64,
        u(&stats["active_nodes"]),
        "topology lists the active nodes"
    );
    assert_eq!(
        edges.len() as u64,
        u(&stats["total_edges"]),
        "topology lists the visible edges"
    );
    let waste = f(&t["meta"]["waste_identified_usd_mo"]);
    let ledger = api.get_ok("/api/v1/waste-ledger").await;
    assert!(
        (waste - f(&ledger["totals"]["waste_usd_mo"])).abs() < 0.05,
        "waste_identified_usd_mo {waste} equals the waste of the waste ledger {}",
        ledger["totals"]
    );
    assert!(waste > 0.0 && waste <= f(&stats["projected_savings_usd_mo"]) + 0.05);
    assert!(
        !nodes.is_empty() && !edges.is_empty(),
        "the mock estate has nodes and edges"
    );

    let mut crns = Vec::new();
    let mut flagged = 0;
    for n in nodes {
        let crn = s(&n["crn"]);
        s(&n["type"]);
        s(&n["state"]);
        assert!(f(&n["cost_usd_mo"]) >= 0.0);
        for h in arr(&n["heuristics_flagged"]) {
            s(&h["rule_name"]);
            assert!((1..=5).contains(&u(&h["severity"])), "severity 1..5: {h}");
            flagged += 1;
        }
        let p = &n["provenance"];
        s(&p["commit"]);
        s(&p["author"]);
        s(&p["file"]);
        u(&p["line"]);
        crns.push(crn.to_owned());
    }
    assert!(
        crns.windows(2).all(|w| w[0] < w[1]),
        "nodes are sorted by crn and unique"
    );
    // Waste nodes and resources in use with a cheaper shape carry findings.
    let status = api.get_ok("/api/v1/heuristics/status").await;
    let verdicts = &status["verdicts"];
    assert_eq!(
        flagged,
        u(&verdicts["waste"]) + u(&verdicts["optimize"]),
        "flagged nodes: {verdicts}"
    );
    assert_eq!(u(&verdicts["waste"]), u(&stats["waste_nodes"]));
    let known: HashSet<&str> = crns.iter().map(String::as_str).collect();
    for e in edges {
        assert!(known.contains(s(&e["source_crn"])), "edge source is a listed node: {e}");
        assert!(known.contains(s(&e["target_crn"])), "edge target is a listed node: {e}");
        assert!(RELATIONS.contains(&s(&e["type"])), "edge type: {e}");
    }

    // The checksum covers the node objects and the edge objects as written,
    // comma-separated, with a newline between the two lists.
    let canonical = format!(
        "{}\n{}",
        raw_array_elements(&first.text, "nodes").join(","),
        raw_array_elements(&first.text, "edges").join(",")
    );
    assert_eq!(
        sha256_hex(canonical.as_bytes()),
        checksum,
        "checksum_sha256 is over the canonical serialization"
    );

    let second = api.get_ok("/api/v1/topology").await;
    assert_eq!(
        second["checksum_sha256"], t["checksum_sha256"],
        "checksum is stable without a scan"
    );
    assert_eq!(
        second["topology_version"], t["topology_version"],
        "version is stable without a scan"
    );
}

#[tokio::test]
async fn stats_agree_with_the_node_listing() {
    let (_g, d) = reader().await;
    let api = d.api();
    let st = api.get_ok("/api/v1/graph/stats").await;
    let active = u(&st["active_nodes"]);
    assert!(
        active > SCALE as u64 / 3,
        "a mock estate of about {SCALE} resources: {st}"
    );
    assert_eq!(
        u(&st["total_nodes"]),
        active + u(&st["logically_deleted"]),
        "total = active + deleted: {st}"
    );
    let providers = st["providers"].as_object().expect("providers object");
    let sum: u64 = providers.values().map(u).sum();
    assert_eq!(sum, active, "providers add up to the active nodes: {st}");
    for p in ["aws", "gcp", "azure", "kubernetes"] {
        assert!(providers.get(p).map(u).unwrap_or(0) > 0, "provider {p} has nodes: {st}");
    }

    let all = api.all_nodes(None).await;
    assert_eq!(all.len() as u64, active, "graph/nodes lists every active node");
    let page = api.get_query_ok("/api/v1/graph/nodes", &[("limit", "1")]).await;
    assert_eq!(u(&page["total"]), active, "graph/nodes total");
    let deleted = api
        .get_query_ok("/api/v1/graph/nodes", &[("limit", "1"), ("include_deleted", "true")])
        .await;
    assert_eq!(
        u(&deleted["total"]),
        u(&st["total_nodes"]),
        "include_deleted counts every row"
    );

    let waste = all.iter().filter(|n| n["is_waste"] == true).count() as u64;
    assert_eq!(waste, u(&st["waste_nodes"]), "waste_nodes");
    assert!(waste < active, "not every node is waste: {waste} of {active}");
    let cost: f64 = all.iter().map(|n| f(&n["cost_usd_mo"])).sum();
    let savings: f64 = all
        .iter()
        .filter(|n| n["is_waste"] == true)
        .map(|n| f(&n["cost_usd_mo"]))
        .sum();
    let tol = 0.01 * active as f64;
    assert!(
        (cost - f(&st["total_cost_usd_mo"])).abs() < tol.max(0.05),
        "total cost {cost} vs {st}"
    );
    // Waste is what the waste resources cost; projected savings add what
    // cheaper shapes of resources in use would save (the waste ledger's total).
    let ledger = api.get_ok("/api/v1/waste-ledger").await;
    assert!(
        (savings - f(&ledger["totals"]["waste_usd_mo"])).abs() < tol.max(0.05),
        "waste {savings} vs {}",
        ledger["totals"]
    );
    assert!(
        (f(&ledger["totals"]["projected_savings_usd_mo"]) - f(&st["projected_savings_usd_mo"])).abs() < 0.05,
        "savings {} vs {st}",
        ledger["totals"]
    );
    assert!(f(&st["projected_savings_usd_mo"]) >= savings - tol.max(0.05));
    let mut by_provider: BTreeMap<&str, u64> = BTreeMap::new();
    for n in &all {
        check_node(n);
        assert_eq!(u(&n["valid_to"]), 0, "a listed node is active: {n}");
        *by_provider.entry(s(&n["provider"])).or_default() += 1;
    }
    for (p, n) in providers {
        assert_eq!(
            by_provider.get(p.as_str()).copied().unwrap_or(0),
            u(n),
            "nodes of provider {p}"
        );
    }
}

#[tokio::test]
async fn node_pages_visit_every_node_exactly_once() {
    let (_g, d) = reader().await;
    let api = d.api();
    let total = u(&api.get_ok("/api/v1/graph/stats").await["active_nodes"]);
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut q = vec![("limit", "37".to_owned())];
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let q: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = api.get_query_ok("/api/v1/graph/nodes", &q).await;
        assert_eq!(u(&page["total"]), total, "total is the same on every page");
        let nodes = arr(&page["nodes"]);
        assert!(nodes.len() <= 37, "a page holds at most limit nodes");
        for n in nodes {
            assert!(seen.insert(s(&n["crn"]).to_owned()), "node listed twice: {}", n["crn"]);
        }
        pages += 1;
        match page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
            Some(c) => {
                assert_eq!(nodes.len(), 37, "only the last page is short");
                cursor = Some(c.to_owned());
            }
            None => break,
        }
        assert!(pages < 10_000, "paging does not end");
    }
    assert_eq!(seen.len() as u64, total, "paging visits every node");
    assert_eq!(pages as u64, total.div_ceil(37), "pages of 37");

    let stats = api.get_ok("/api/v1/graph/stats").await;
    for (provider, count) in stats["providers"].as_object().expect("providers") {
        let nodes = api.all_nodes(Some(provider)).await;
        assert_eq!(nodes.len() as u64, u(count), "nodes of {provider}");
        assert!(
            nodes.iter().all(|n| n["provider"] == provider.as_str()),
            "the provider filter only returns {provider}"
        );
        let page = api
            .get_query_ok("/api/v1/graph/nodes", &[("provider", provider), ("limit", "3")])
            .await;
        assert_eq!(u(&page["total"]), u(count), "filtered total of {provider}");
    }
    let none = api
        .get_query_ok("/api/v1/graph/nodes", &[("provider", "no-such-cloud")])
        .await;
    assert_eq!(u(&none["total"]), 0);
    assert!(arr(&none["nodes"]).is_empty());

    for bad in ["0", "1001", "-1", "ten"] {
        api.get_query("/api/v1/graph/nodes", &[("limit", bad)])
            .await
            .expect_error(400, "bad_request");
    }
    api.get_query("/api/v1/graph/nodes", &[("cursor", "!!not-a-cursor")])
        .await
        .expect_error(400, "bad_request");
}

#[tokio::test]
async fn one_node_by_crn_in_every_accepted_form() {
    let (_g, d) = reader().await;
    let api = d.api();
    let all = api.all_nodes(None).await;
    let with_slash = all.iter().find(|n| s(&n["physical_id"]).contains('/'));
    let with_colon = all.iter().find(|n| s(&n["physical_id"]).contains(':'));
    let with_slash = with_slash.expect("the mock estate has a physical id with `/` (an Azure resource id)");
    let with_colon = with_colon.expect("the mock estate has a physical id with `:` (an ARN)");
    let plain = all.iter().find(|n| n["provider"] == "aws").expect("an aws node");

    for n in [plain, with_slash, with_colon] {
        let crn = s(&n["crn"]);
        let forms = [
            encode_segment(crn),
            encode_segment(&without_ns(crn)),
            crn.replace('/', "%2F"),
            without_ns(crn).replace('/', "%2F"),
        ];
        for form in forms {
            let got = api.get_ok(&format!("/api/v1/graph/nodes/{form}")).await;
            check_node(&got);
            for k in NODE_FIELDS {
                assert_eq!(got[k], n[k], "field {k} of {form} equals the listing");
            }
            u(&got["edges_out"]);
            u(&got["edges_in"]);
        }
    }

    // The plugin form (7 segments) names the same node.
    if let Some(vol) = all.iter().find(|n| n["provider"] == "aws" && n["type"] == "ec2:volume") {
        let plugin = format!(
            "crn:svc:aws:{}:{}:volume:{}",
            s(&vol["region"]),
            s(&vol["account"]),
            s(&vol["physical_id"])
        );
        let got = api
            .get_ok(&format!("/api/v1/graph/nodes/{}", encode_segment(&plugin)))
            .await;
        assert_eq!(got["crn"], vol["crn"], "plugin form {plugin}");
    }

    // Unknown and malformed CRNs, on every route that takes one.
    let unknown = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0doesnotexist";
    for route in [
        "/api/v1/graph/nodes/{}",
        "/api/v1/graph/nodes/{}/edges",
        "/api/v1/graph/blast-radius/{}",
    ] {
        let path = route.replace("{}", &encode_segment(unknown));
        let body = api.get(&path).await.expect_error(404, "not_found");
        assert!(
            s(&body["error"]["message"]).contains("vol-0doesnotexist"),
            "message names the crn: {body}"
        );
        for bad in ["crn:svc:aws", "not-a-crn", "crn:svc:aws:us-east-1:ec2::1:x"] {
            let path = route.replace("{}", &encode_segment(bad));
            api.get(&path).await.expect_error(422, "invalid");
        }
    }
}

#[tokio::test]
async fn edges_and_blast_radius_follow_dependence() {
    let (_g, d) = reader().await;
    let api = d.api();
    let topo = api.get_ok("/api/v1/topology").await;
    let edges = arr(&topo["edges"]);
    let costs: BTreeMap<&str, f64> = arr(&topo["nodes"])
        .iter()
        .map(|n| (s(&n["crn"]), f(&n["cost_usd_mo"])))
        .collect();

    // A node's edges, compared with the topology.
    let mut out_by: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    let mut in_by: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for e in edges {
        out_by.entry(s(&e["source_crn"])).or_default().push(e);
        in_by.entry(s(&e["target_crn"])).or_default().push(e);
    }
    let (busy, _) = out_by
        .iter()
        .max_by_key(|(c, v)| v.len() + in_by.get(*c).map_or(0, Vec::len))
        .expect("an edge");
    let got = api
        .get_ok(&format!("/api/v1/graph/nodes/{}/edges", encode_segment(busy)))
        .await;
    assert_eq!(got["crn"], *busy);
    let outgoing = arr(&got["outgoing"]);
    let incoming = arr(&got["incoming"]);
    let want_out = out_by.get(busy).map_or(0, Vec::len);
    let want_in = in_by.get(busy).map_or(0, Vec::len);
    assert_eq!(u(&got["outgoing_total"]), want_out as u64, "outgoing edges of {busy}");
    assert_eq!(u(&got["incoming_total"]), want_in as u64, "incoming edges of {busy}");
    assert_eq!(outgoing.len(), want_out);
    assert_eq!(incoming.len(), want_in);
    assert!(
        outgoing
            .iter()
            .all(|e| e["source_crn"] == *busy && RELATIONS.contains(&s(&e["type"])))
    );
    assert!(
        incoming
            .iter()
            .all(|e| e["target_crn"] == *busy && RELATIONS.contains(&s(&e["type"])))
    );
    let node = api
        .get_ok(&format!("/api/v1/graph/nodes/{}", encode_segment(busy)))
        .await;
    assert_eq!(u(&node["edges_out"]), want_out as u64, "edges_out of the node object");
    assert_eq!(u(&node["edges_in"]), want_in as u64, "edges_in of the node object");
    let capped = api
        .get_query_ok(
            &format!("/api/v1/graph/nodes/{}/edges", encode_segment(busy)),
            &[("limit", "1")],
        )
        .await;
    assert!(arr(&capped["outgoing"]).len() <= 1 && arr(&capped["incoming"]).len() <= 1);
    assert_eq!(capped["truncated"], json!(want_out > 1 || want_in > 1));

    // Blast radius: for one edge of every relationship, the dependent end is
    // affected directly by removing the other end.
    let mut tried = BTreeSet::new();
    for e in edges {
        let rel = s(&e["type"]);
        if !tried.insert(rel) {
            continue;
        }
        let (removed, affected) = removal(e);
        if removed == affected {
            continue;
        }
        let b = api
            .get_query_ok(
                &format!("/api/v1/graph/blast-radius/{}", encode_segment(&removed)),
                &[("limit", "10000")],
            )
            .await;
        assert_eq!(b["crn"], removed.as_str());
        let list = arr(&b["affected"]);
        assert_eq!(
            u(&b["affected_count"]),
            list.len() as u64,
            "untruncated listing holds every affected node"
        );
        assert_eq!(b["truncated"], false);
        let hit = list
            .iter()
            .find(|a| a["crn"] == affected.as_str())
            .unwrap_or_else(|| panic!("removing {removed} affects {affected} through {rel}; blast radius: {b}"));
        assert_eq!(u(&hit["depth"]), 1, "a direct dependent: {hit}");
        assert_eq!(hit["via_crn"], removed.as_str());
        assert!(
            list.iter().all(|a| a["crn"] != removed.as_str()),
            "the removed node is not listed as affected"
        );
        assert!(
            list.iter()
                .all(|a| u(&a["depth"]) >= 1 && u(&a["depth"]) <= u(&b["max_depth"]))
        );
        let sum: f64 = list
            .iter()
            .map(|a| costs.get(s(&a["crn"])).copied().unwrap_or(f64::NAN))
            .sum();
        assert!(
            (sum - f(&b["total_cost_usd_mo"])).abs() < 0.05 + 1e-4 * sum,
            "blast cost {sum} vs {b}"
        );
        if list.len() > 1 {
            let cut = api
                .get_query_ok(
                    &format!("/api/v1/graph/blast-radius/{}", encode_segment(&removed)),
                    &[("limit", "1")],
                )
                .await;
            assert_eq!(arr(&cut["affected"]).len(), 1, "limit caps the listing");
            assert_eq!(cut["affected_count"], b["affected_count"], "limit never caps the count");
            assert_eq!(
                cut["total_cost_usd_mo"], b["total_cost_usd_mo"],
                "limit never caps the cost"
            );
            assert_eq!(cut["truncated"], true);
        }
    }
    assert!(tried.len() >= 3, "the mock estate has several relationships: {tried:?}");
}

#[tokio::test]
async fn ui_views_cover_the_graph() {
    let (_g, d) = reader().await;
    let api = d.api();
    let st = api.get_ok("/api/v1/graph/stats").await;
    let active = u(&st["active_nodes"]);

    let rows = api.get_ok("/api/v1/nodes").await;
    assert_eq!(u(&rows["total"]), active, "nodes rows total");
    let list = arr(&rows["rows"]);
    assert_eq!(list.len() as u64, active.min(1000), "default page of rows");
    for r in list {
        for k in [
            "crn",
            "type",
            "provider",
            "region",
            "state",
            "cost_usd_mo",
            "is_waste",
            "phase",
            "reachability",
        ] {
            assert!(r.get(k).is_some(), "row lacks {k}: {r}");
        }
    }

    let flow = api.get_query_ok("/api/v1/graph", &[("limit", "10000")]).await;
    assert_eq!(u(&flow["total_nodes"]), active, "graph total_nodes");
    let ids: HashSet<&str> = arr(&flow["nodes"]).iter().map(|n| s(&n["id"])).collect();
    assert_eq!(ids.len(), arr(&flow["nodes"]).len(), "node ids are unique");
    assert_eq!(ids.len() as u64, active, "every node with a limit above the graph size");
    let edge_ids: HashSet<&str> = arr(&flow["edges"]).iter().map(|e| s(&e["id"])).collect();
    assert_eq!(edge_ids.len(), arr(&flow["edges"]).len(), "edge ids are unique");
    assert_eq!(edge_ids.len() as u64, u(&st["total_edges"]), "every visible edge");
    for e in arr(&flow["edges"]) {
        assert!(
            ids.contains(s(&e["source"])) && ids.contains(s(&e["target"])),
            "edge endpoints are nodes: {e}"
        );
    }

    let topo = api.get_query_ok("/api/v1/graph/topology", &[("limit", "10000")]).await;
    assert_eq!(u(&topo["total_nodes"]), active);
    let clusters = arr(&topo["clusters"]);
    let cluster_ids: HashSet<&str> = clusters.iter().map(|c| s(&c["id"])).collect();
    let nodes = arr(&topo["nodes"]);
    assert_eq!(nodes.len() as u64, active);
    for n in nodes {
        assert!(cluster_ids.contains(s(&n["cluster"])), "node in a listed cluster: {n}");
        f(&n["x"]);
        f(&n["y"]);
    }
    let counted: u64 = clusters.iter().map(|c| u(&c["node_count"])).sum();
    assert_eq!(counted, active, "cluster node counts add up");
    for c in clusters {
        let id = format!("{}/{}/{}", s(&c["provider"]), s(&c["account"]), s(&c["region"]));
        assert_eq!(c["id"], id.as_str(), "cluster id is provider/account/region");
    }
    let small = api.get_query_ok("/api/v1/graph/topology", &[("limit", "10")]).await;
    assert_eq!(arr(&small["nodes"]).len(), 10);
    assert_eq!(small["truncated"], true);
}

#[tokio::test]
async fn scans_and_syncs_report_and_advance() {
    let (_g, d) = writer().await;
    let api = d.api();
    let before = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    let last_seq = u(&before[0]["meta"]["scan_seq"]);

    let r = api.scan_wait().await;
    assert_eq!(r["status"], "completed");
    assert_eq!(r["cycle"], "scan");
    assert_eq!(u(&r["scan_seq"]), last_seq + 1, "scan_seq follows the last one: {r}");
    for k in [
        "node_count",
        "edge_count",
        "waste_count",
        "cost_usd_mo",
        "nodes_added",
        "nodes_changed",
        "nodes_deleted",
    ] {
        assert!(r[k].is_number(), "report has {k}: {r}");
    }
    let st = api.get_ok("/api/v1/graph/stats").await;
    assert_eq!(
        r["node_count"], st["active_nodes"],
        "report node_count equals graph/stats"
    );
    assert_eq!(
        r["edge_count"], st["total_edges"],
        "report edge_count equals graph/stats"
    );
    assert_eq!(
        r["waste_count"], st["waste_nodes"],
        "report waste_count equals graph/stats"
    );
    assert!((f(&r["cost_usd_mo"]) - f(&st["total_cost_usd_mo"])).abs() < 0.05);
    let ev = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await;
    let ev = &arr(&ev["events"])[0];
    assert_eq!(ev["type"], "SCAN_COMPLETED");
    assert_eq!(u(&ev["seq"]), u(&r["event_seq"]), "the report names its ledger event");
    assert_eq!(ev["meta"]["scan_seq"], r["scan_seq"]);

    let sync = api.trigger("/api/v1/sync", &json!({"wait": true})).await.expect(200);
    assert_eq!(sync["cycle"], "sync");
    assert_eq!(u(&sync["scan_seq"]), last_seq + 2);

    // Query flag and an empty body work too.
    let q = api
        .trigger("/api/v1/engine/scan?wait=true", &json!({}))
        .await
        .expect(200);
    assert_eq!(u(&q["scan_seq"]), last_seq + 3);

    // Without wait: 202 now, SCAN_COMPLETED later.
    let head = u(&api.get_ok("/api/v1/ledger/verify").await["last_seq"]);
    let mut ws = d.ws().await;
    ws.send_since(head).await;
    let started = api.scan_start().await;
    assert_eq!(started["status"], "started");
    assert_eq!(u(&started["scan_seq"]), last_seq + 4);
    let done = ws
        .next_matching(common::SCAN_DEADLINE, |e| e["event_type"] == "SCAN_COMPLETED")
        .await;
    assert_eq!(
        done["payload"]["scan_seq"], started["scan_seq"],
        "the started scan completes"
    );
    ws.close().await;

    for bad in ["{\"wait\": \"soon\"}", "[1]", "{not json"] {
        api.post_raw("/api/v1/engine/scan", bad)
            .await
            .expect_error(400, "bad_request");
    }
    api.post_raw("/api/v1/engine/scan?wait=perhaps", "")
        .await
        .expect_error(400, "bad_request");
    let after = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    assert_eq!(after.len(), before.len() + 4, "rejected triggers started no scan");
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true, "ledger verifies: {v}");
}

#[tokio::test]
async fn a_second_scan_while_one_runs_is_a_conflict() {
    let dir = common::data_dir();
    let d = Daemon::start_scanned(dir.path(), LONG_SCAN_SCALE).await;
    let api = d.api();
    let started = api.scan_start().await;
    let running = u(&started["scan_seq"]);
    let second = api.post_json("/api/v1/engine/scan", &json!({"wait": false})).await;
    assert_ne!(
        second.status, 202,
        "the first scan finished before the second trigger, so nothing was running: raise LONG_SCAN_SCALE ({LONG_SCAN_SCALE})"
    );
    second.expect_error(409, "conflict");
    api.post_json("/api/v1/sync", &json!({"wait": true}))
        .await
        .expect_error(409, "conflict");
    api.post_json("/api/v1/engine/scan", &json!({"wait": true}))
        .await
        .expect_error(409, "conflict");
    // The daemon answers reads while it scans.
    api.get_ok("/api/v1/graph/stats").await;
    d.anonymous().get("/healthz").await.expect(200);

    let done = d.wait_scan_after(0).await;
    let done = if u(&done["payload"]["scan_seq"]) == running {
        done
    } else {
        let mut ws = d.ws().await;
        ws.send_since(u(&done["seq"])).await;
        let ev = ws
            .next_matching(common::SCAN_DEADLINE, |e| e["event_type"] == "SCAN_COMPLETED")
            .await;
        ws.close().await;
        ev
    };
    assert_eq!(u(&done["payload"]["scan_seq"]), running, "the running scan completes");
    let scans = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    assert_eq!(
        scans.len(),
        2,
        "the scan at start and the triggered one; the refused triggers ran nothing"
    );
}

#[tokio::test]
async fn history_filters_paging_and_errors() {
    let (_g, d) = reader().await;
    let api = d.api();
    let all = api.history_all(&[]).await;
    assert!(!all.is_empty(), "the scan at start is in the history");
    let total = all.len() as u64;
    let seq_list: Vec<u64> = all.iter().map(|e| u(&e["seq"])).collect();
    assert!(seq_list.windows(2).all(|w| w[0] > w[1]), "newest first: {seq_list:?}");
    for e in &all {
        for k in [
            "id",
            "ts",
            "type",
            "crn",
            "status",
            "message",
            "actor",
            "session_id",
            "meta",
            "seq",
            "hash",
        ] {
            assert!(e.get(k).is_some(), "event lacks {k}: {e}");
        }
        assert_eq!(s(&e["id"]), u(&e["seq"]).to_string(), "id is the seq");
        assert!(is_rfc3339(s(&e["ts"])), "ts: {e}");
        assert!(e["meta"].is_object());
        assert_eq!(s(&e["hash"]).len(), 64);
    }
    let ts_list: Vec<&str> = all.iter().map(|e| s(&e["ts"])).collect();

    let page = api.get_ok("/api/v1/history").await;
    assert_eq!(u(&page["total"]), total);
    assert!(
        arr(&page["events"]).len() as u64 == total.min(100),
        "default page size 100"
    );

    let scans = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    assert!(!scans.is_empty());
    assert!(
        scans
            .iter()
            .all(|e| e["type"] == "SCAN_COMPLETED" && e["status"] == "OK")
    );
    assert_eq!(
        scans.len(),
        all.iter().filter(|e| e["type"] == "SCAN_COMPLETED").count()
    );
    let ok = api.history_all(&[("status", "OK")]).await;
    assert_eq!(ok.len(), all.iter().filter(|e| e["status"] == "OK").count());
    let approved = api.get_query_ok("/api/v1/history", &[("status", "approved")]).await;
    assert_eq!(
        u(&approved["total"]),
        all.iter().filter(|e| e["status"] == "APPROVED").count() as u64
    );
    let none = api.get_query_ok("/api/v1/history", &[("type", "NO_SUCH_TYPE")]).await;
    assert_eq!(u(&none["total"]), 0);
    assert_eq!(none["next_cursor"], "");

    // crn: only that resource's events (a CRN without `svc` names the same one).
    let node = api.get_query_ok("/api/v1/graph/nodes", &[("limit", "1")]).await;
    let crn = s(&arr(&node["nodes"])[0]["crn"]).to_owned();
    let by_crn = api.history_all(&[("crn", &crn)]).await;
    assert_eq!(by_crn.len(), all.iter().filter(|e| e["crn"] == crn.as_str()).count());
    let short = api.get_query_ok("/api/v1/history", &[("crn", &without_ns(&crn))]).await;
    assert_eq!(u(&short["total"]), by_crn.len() as u64);
    api.get_query("/api/v1/history", &[("crn", "not-a-crn")])
        .await
        .expect_error(422, "invalid");

    // since / until.
    let wide = api.get_query_ok("/api/v1/history", &[("since", "1h")]).await;
    assert_eq!(u(&wide["total"]), total, "everything happened within the hour");
    let future = api
        .get_query_ok("/api/v1/history", &[("since", "2999-01-01T00:00:00Z")])
        .await;
    assert_eq!(u(&future["total"]), 0);
    let past = api
        .get_query_ok("/api/v1/history", &[("until", "2000-01-01T00:00:00Z")])
        .await;
    assert_eq!(u(&past["total"]), 0);
    let until_future = api
        .get_query_ok("/api/v1/history", &[("until", "2999-01-01T00:00:00Z")])
        .await;
    assert_eq!(u(&until_future["total"]), total);
    let oldest_ts = *ts_list.last().expect("an event");
    let from_oldest = api.get_query_ok("/api/v1/history", &[("since", oldest_ts)]).await;
    assert_eq!(u(&from_oldest["total"]), total, "since is inclusive");
    let before_oldest = api.get_query_ok("/api/v1/history", &[("until", oldest_ts)]).await;
    assert_eq!(u(&before_oldest["total"]), 0, "until is exclusive");
    let newest_ts = ts_list[0];
    let before_newest = api.get_query_ok("/api/v1/history", &[("until", newest_ts)]).await;
    assert_eq!(
        u(&before_newest["total"]),
        ts_list.iter().filter(|t| micros(t) < micros(newest_ts)).count() as u64,
        "until counts the events before it"
    );
    assert!(
        ts_list.windows(2).all(|w| micros(w[0]) >= micros(w[1])),
        "times never go backwards"
    );

    // limit and cursor.
    let one = api.get_query_ok("/api/v1/history", &[("limit", "1")]).await;
    assert_eq!(arr(&one["events"]).len(), 1);
    assert_eq!(arr(&one["events"])[0]["seq"], all[0]["seq"]);
    let max = api.get_query_ok("/api/v1/history", &[("limit", "500")]).await;
    assert_eq!(arr(&max["events"]).len() as u64, total.min(500));
    let mut paged = Vec::new();
    let mut cursor = String::new();
    loop {
        let mut q = vec![("limit", "2")];
        if !cursor.is_empty() {
            q.push(("cursor", cursor.as_str()));
        }
        let p = api.get_query_ok("/api/v1/history", &q).await;
        assert_eq!(u(&p["total"]), total, "total ignores the cursor");
        paged.extend(arr(&p["events"]).iter().map(|e| u(&e["seq"])));
        let next = s(&p["next_cursor"]).to_owned();
        if next.is_empty() {
            break;
        }
        cursor = next;
    }
    assert_eq!(paged, seq_list, "pages of 2 list every event once, newest first");
    if total > 1 {
        assert!(!s(&one["next_cursor"]).is_empty(), "more events: a cursor");
    }

    for (k, v) in [
        ("limit", "0"),
        ("limit", "501"),
        ("limit", "-3"),
        ("limit", "many"),
        ("since", "yesterday"),
        ("since", "-3d"),
        ("until", "3d"),
        ("until", "2026-13-01T00:00:00Z"),
        ("cursor", "!!"),
        ("cursor", "bm90LWEtc2Vx"),
        ("status", "DONE"),
    ] {
        let body = api
            .get_query("/api/v1/history", &[(k, v)])
            .await
            .expect_error(400, "bad_request");
        assert!(s(&body["error"]["message"]).contains(k), "message names {k}: {body}");
    }
}

#[tokio::test]
async fn history_summary_resource_sessions_prune_and_verify() {
    let (_g, d) = writer().await;
    let api = d.api();
    let all = api.history_all(&[]).await;
    let total = all.len() as u64;

    let sum = api.get_ok("/api/v1/history/summary").await;
    assert_eq!(u(&sum["total_events"]), total, "summary counts every event: {sum}");
    for k in ["quarantined", "approved", "rejected"] {
        u(&sum[k]);
    }
    let savings: f64 = all.iter().filter_map(|e| e["meta"]["savings_usd"].as_f64()).sum();
    assert!(
        (f(&sum["total_savings_usd"]) - savings).abs() < 0.05,
        "total_savings_usd sums meta.savings_usd: {sum}"
    );
    assert_eq!(
        s(&sum["first_event"]),
        s(&all.last().expect("events")["ts"]),
        "first_event"
    );
    assert_eq!(s(&sum["last_event"]), s(&all[0]["ts"]), "last_event");

    let sessions = api.get_ok("/api/v1/history/sessions").await;
    let list = arr(&sessions["sessions"]);
    assert_eq!(u(&sum["session_count"]), list.len() as u64);
    assert_eq!(list.len(), 1, "one daemon run wrote every event");
    assert_eq!(list[0]["session_id"], sessions["current"]);
    assert_eq!(u(&list[0]["event_count"]), total);
    assert!(
        all.iter().all(|e| e["session_id"] == sessions["current"]),
        "events carry the session id"
    );
    assert!(is_rfc3339(s(&list[0]["first_event"])) && is_rfc3339(s(&list[0]["last_event"])));

    let crn = s(&arr(&api.get_query_ok("/api/v1/graph/nodes", &[("limit", "1")]).await["nodes"])[0]["crn"]).to_owned();
    let res = api
        .get_query_ok("/api/v1/history/resource", &[("crn", &without_ns(&crn))])
        .await;
    assert_eq!(res["crn"], crn.as_str(), "the resource is named in graph form");
    assert_eq!(
        u(&res["total"]),
        all.iter().filter(|e| e["crn"] == crn.as_str()).count() as u64
    );
    assert_eq!(arr(&res["events"]).len() as u64, u(&res["total"]));
    api.get("/api/v1/history/resource")
        .await
        .expect_error(400, "bad_request");
    api.get_query("/api/v1/history/resource", &[("crn", "nope")])
        .await
        .expect_error(422, "invalid");

    // Nothing is ten years old: prune removes nothing, and records itself.
    let pruned = api
        .post_json("/api/v1/history/prune", &json!({"max_age_days": 3650}))
        .await
        .expect(200);
    assert_eq!(pruned, json!({"pruned": 0, "max_age_days": 3650}));
    let after = api.history_all(&[]).await;
    assert_eq!(after.len() as u64, total + 1, "the prune is recorded");
    assert_eq!(after[0]["type"], "HISTORY_PRUNED");
    assert_eq!(after[0]["meta"]["pruned"], 0);
    assert_eq!(&after[1..], &all[..], "older events are untouched");
    api.post_json("/api/v1/history/prune", &json!({"max_age_days": -1}))
        .await
        .expect_error(400, "bad_request");

    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true, "ledger verifies: {v}");
    assert_eq!(v["first_broken"], Value::Null);
    assert_eq!(u(&v["first_seq"]), 1);
    assert_eq!(u(&v["last_seq"]), u(&after[0]["seq"]));
    assert_eq!(u(&v["events"]), total + 1);
}

/// Every node CRN of `graph/at` at `ts`, following its cursor.
async fn crns_at(api: &Api, ts: &str) -> (BTreeSet<String>, u64, u64) {
    let mut crns = BTreeSet::new();
    let mut edges = 0u64;
    let mut cursor: Option<String> = None;
    loop {
        let mut q = vec![("ts", ts.to_owned()), ("limit", "500".to_owned())];
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let q: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = api.get_query_ok("/api/v1/graph/at", &q).await;
        for n in arr(&page["nodes"]) {
            assert!(
                crns.insert(s(&n["crn"]).to_owned()),
                "graph/at lists {} twice",
                n["crn"]
            );
        }
        edges += arr(&page["edges"]).len() as u64;
        if let Some(c) = page["next_cursor"].as_str().filter(|c| !c.is_empty()) {
            cursor = Some(c.to_owned());
            continue;
        }
        let (total_nodes, total_edges) = (u(&page["total_nodes"]), u(&page["total_edges"]));
        assert_eq!(crns.len() as u64, total_nodes, "graph/at pages list total_nodes nodes");
        assert_eq!(edges, total_edges, "graph/at pages list total_edges edges");
        return (crns, total_nodes, total_edges);
    }
}

#[tokio::test]
async fn time_travel_shows_past_states_and_diffs_between_scans() {
    let (_g, d) = writer().await;
    let api = d.api();
    let topo_before = api.get_ok("/api/v1/topology").await;

    // Scan until two consecutive scans saw additions, deletions and changes.
    let mut found = None;
    for _ in 0..12 {
        let r = api.scan_wait().await;
        if u(&r["nodes_added"]) > 0 && u(&r["nodes_deleted"]) > 0 && u(&r["nodes_changed"]) > 0 {
            found = Some(r);
            break;
        }
    }
    let later = found.expect("within 12 scans the mock estate adds, deletes and changes resources in one scan");
    let scans = api.history_all(&[("type", "SCAN_COMPLETED")]).await;
    let at_seq = |seq: u64| {
        scans
            .iter()
            .find(|e| u(&e["meta"]["scan_seq"]) == seq)
            .unwrap_or_else(|| panic!("no SCAN_COMPLETED of scan {seq}"))
    };
    let later_ev = at_seq(u(&later["scan_seq"]));
    let earlier_ev = at_seq(u(&later["scan_seq"]) - 1);
    let first_ev = scans.last().expect("scans");
    assert_eq!(u(&first_ev["meta"]["scan_seq"]), 1, "the oldest scan is the first");
    let (t1, ta, tb) = (s(&first_ev["ts"]), s(&earlier_ev["ts"]), s(&later_ev["ts"]));

    // graph/at at a scan's time is that scan's graph.
    let (first_crns, first_nodes, first_edges) = crns_at(&api, t1).await;
    assert_eq!(
        first_nodes,
        u(&first_ev["meta"]["node_count"]),
        "graph/at at the first scan counts its nodes"
    );
    assert_eq!(
        first_edges,
        u(&first_ev["meta"]["edge_count"]),
        "graph/at at the first scan counts its edges"
    );
    let (a_crns, a_nodes, _) = crns_at(&api, ta).await;
    assert_eq!(a_nodes, u(&earlier_ev["meta"]["node_count"]));
    let (b_crns, b_nodes, b_edges) = crns_at(&api, tb).await;
    assert_eq!(b_nodes, u(&later["node_count"]));
    assert_eq!(b_edges, u(&later["edge_count"]));
    let now: BTreeSet<String> = api
        .all_nodes(None)
        .await
        .iter()
        .map(|n| s(&n["crn"]).to_owned())
        .collect();
    assert_eq!(now, b_crns, "graph/at at the last scan is the live graph");
    assert_ne!(first_crns, now, "the estate changed since the first scan");
    let empty = api
        .get_query_ok("/api/v1/graph/at", &[("ts", "2000-01-01T00:00:00Z")])
        .await;
    assert_eq!(u(&empty["total_nodes"]), 0, "nothing existed before the first scan");

    // graph/diff between the two scans is what the later scan reported.
    let diff = api
        .get_query_ok("/api/v1/graph/diff", &[("from", ta), ("to", tb), ("limit", "10000")])
        .await;
    let counts = &diff["counts"];
    assert_eq!(
        u(&counts["added"]),
        u(&later["nodes_added"]),
        "added vs nodes_added: {counts} {later}"
    );
    assert_eq!(
        u(&counts["removed"]),
        u(&later["nodes_deleted"]),
        "removed vs nodes_deleted: {counts} {later}"
    );
    // A node changes by what its provider reported, by its verdict, or by
    // its reachability and removal risk.
    let changed = u(&counts["changed"]);
    let most = u(&later["nodes_changed"]) + u(&later["verdicts_changed"]) + u(&later["assessments_changed"]);
    assert!(
        changed >= u(&later["nodes_changed"]) && changed <= most,
        "changed vs nodes_changed, verdicts_changed and assessments_changed: {counts} {later}"
    );
    let (added, removed, changed) = (arr(&diff["added"]), arr(&diff["removed"]), arr(&diff["changed"]));
    assert!(!added.is_empty() && !removed.is_empty() && !changed.is_empty());
    assert_eq!(added.len() as u64, u(&counts["added"]));
    for n in added {
        let c = s(&n["crn"]);
        assert!(!a_crns.contains(c) && b_crns.contains(c), "added {c} is new");
    }
    for n in removed {
        let c = s(&n["crn"]);
        assert!(a_crns.contains(c) && !b_crns.contains(c), "removed {c} is gone");
    }
    for ch in changed {
        let c = s(&ch["crn"]);
        assert!(
            a_crns.contains(c) && b_crns.contains(c),
            "changed {c} exists at both times"
        );
        let fields = arr(&ch["fields"]);
        assert!(!fields.is_empty(), "a change names its fields: {ch}");
        for field in fields {
            assert_ne!(ch["before"][s(field)], ch["after"][s(field)], "field {field} differs");
        }
    }
    assert_eq!(
        a_crns.len() as i64 + added.len() as i64 - removed.len() as i64,
        b_crns.len() as i64
    );
    let still = api
        .get_query_ok("/api/v1/graph/diff", &[("from", tb), ("to", tb)])
        .await;
    assert_eq!(
        still["counts"],
        json!({"added":0,"removed":0,"changed":0,"edges_added":0,"edges_removed":0,"edges_changed":0})
    );

    let topo_after = api.get_ok("/api/v1/topology").await;
    assert_ne!(
        topo_after["checksum_sha256"], topo_before["checksum_sha256"],
        "a changed graph has another checksum"
    );
    assert_ne!(
        topo_after["topology_version"], topo_before["topology_version"],
        "a changed graph has another version"
    );

    for q in [
        vec![],
        vec![("ts", "yesterday")],
        vec![("ts", "2026-13-01T00:00:00Z")],
        vec![("ts", t1), ("limit", "0")],
        vec![("ts", t1), ("cursor", "!!")],
    ] {
        api.get_query("/api/v1/graph/at", &q)
            .await
            .expect_error(400, "bad_request");
    }
    for q in [
        vec![("from", tb), ("to", ta)],
        vec![("from", ta)],
        vec![("to", tb)],
        vec![("from", "x"), ("to", tb)],
    ] {
        api.get_query("/api/v1/graph/diff", &q)
            .await
            .expect_error(400, "bad_request");
    }
}

#[tokio::test]
async fn bad_requests_get_error_bodies_and_the_daemon_keeps_serving() {
    // Alone: a request wrongly accepted would change the ledger.
    let (_g, d) = writer().await;
    let api = d.api();
    let before = api.get_ok("/api/v1/history/summary").await;

    api.post_raw("/api/v1/history/prune", "{\"max_age_days\": 3")
        .await
        .expect_error(400, "bad_request");
    api.post_raw("/api/v1/history/prune", "not json at all")
        .await
        .expect_error(400, "bad_request");
    api.post_raw("/api/v1/history/prune", "{\"max_age_days\": \"ten\"}")
        .await
        .expect_error(400, "bad_request");
    api.post_raw("/api/v1/history/prune", "{\"max_age_days\": 1.5}")
        .await
        .expect_error(400, "bad_request");
    api.post_raw("/api/v1/history/prune", "[30]")
        .await
        .expect_error(400, "bad_request");
    api.post_raw("/api/v1/history/prune", "{}")
        .await
        .expect_error(400, "bad_request");
    let big = format!("{{\"max_age_days\": 30, \"pad\": \"{}\"}}", "x".repeat(1024 * 1024));
    api.post_raw("/api/v1/history/prune", big.clone())
        .await
        .expect_error(413, "payload_too_large");
    // A route that reads no body refuses it too, by its Content-Length.
    api.post_raw("/api/v1/ledger/export", big)
        .await
        .expect_error(413, "payload_too_large");

    api.get("/api/v1/no/such/route").await.expect_error(404, "not_found");
    api.get("/no-such-route").await.expect_error(404, "not_found");
    api.post_json("/api/v1/graph/stats", &json!({}))
        .await
        .expect_error(405, "bad_request");

    // Nothing above changed anything, and the daemon still answers.
    let after = api.get_ok("/api/v1/history/summary").await;
    assert_eq!(after, before, "rejected requests left the ledger alone");
    d.anonymous().get("/healthz").await.expect(200);
    d.anonymous().get("/readyz").await.expect(200);
    api.get_ok("/api/v1/graph/stats").await;
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true);
}

#[tokio::test]
async fn every_listed_route_answers() {
    let (_g, d) = writer().await;
    let api = d.api();
    let crn = s(&arr(&api.get_query_ok("/api/v1/graph/nodes", &[("limit", "1")]).await["nodes"])[0]["crn"]).to_owned();
    let now = s(&arr(&api.get_query_ok("/api/v1/history", &[("limit", "1")]).await["events"])[0]["ts"]).to_owned();
    let pending = api
        .get_query_ok("/api/v1/remediation/queue", &[("stage", "pending"), ("limit", "10")])
        .await["stages"]["pending"]
        .as_array()
        .expect("pending items")
        .clone();
    assert!(pending.len() >= 4, "the estate has pending remediations");
    let item = |i: usize| json!({"crn": pending[i]["crn"], "plan_hash": pending[i]["plan_hash"]});
    let with = |i: usize, extra: Value| {
        let mut v = item(i);
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    let mut quarantine_hash = String::new();
    for (method, path) in svc_api::ROUTES {
        let path = path.replace("{crn}", &encode_segment(&crn));
        let r = match (*method, path.as_str()) {
            ("GET", "/events") => {
                let mut ws = d.ws().await;
                ws.send_since(0).await;
                let first = ws.next(common::SCAN_DEADLINE).await;
                assert_eq!(first["seq"], 1, "/events replays from the first event");
                ws.close().await;
                continue;
            }
            ("GET", "/api/v1/registry/search") | ("POST", "/api/v1/registry/refresh") => {
                // No registry.url in this data directory.
                let r = if *method == "GET" {
                    api.get(&path).await
                } else {
                    api.post_json(&path, &json!({})).await
                };
                r.expect_error(409, "conflict");
                continue;
            }
            ("POST", "/api/v1/registry/install" | "/api/v1/plugins/install") => {
                api.post_json(&path, &json!({"name": "mock"}))
                    .await
                    .expect_error(409, "conflict");
                continue;
            }
            ("POST", "/api/v1/config/slack-test") => {
                // No notify.slack_webhook in this data directory.
                api.post_json(&path, &json!({})).await.expect_error(409, "conflict");
                continue;
            }
            ("POST", "/api/v1/registry/remove") => {
                api.post_json(&path, &json!({"name": "mock"}))
                    .await
                    .expect_error(404, "not_found");
                continue;
            }
            ("GET", "/api/v1/graph/at") => api.get_query(&path, &[("ts", &now)]).await,
            ("GET", "/api/v1/graph/diff") => api.get_query(&path, &[("from", &now), ("to", &now)]).await,
            ("GET", "/api/v1/history/resource") => api.get_query(&path, &[("crn", &crn)]).await,
            ("GET", "/api/v1/plan") => api.get_query(&path, &[("crn", s(&pending[0]["crn"]))]).await,
            ("GET", "/api/v1/provenance") => api.get_query(&path, &[("crn", &crn)]).await,
            ("GET", _) => api.get(&path).await,
            ("POST", "/api/v1/history/prune") => api.post_json(&path, &json!({"max_age_days": 3650})).await,
            ("POST", "/api/v1/plugins/toggle") => {
                // No plugin is installed in this data directory.
                api.post_json(&path, &json!({"name": "aws"}))
                    .await
                    .expect_error(404, "not_found");
                continue;
            }
            ("POST", "/api/v1/ledger/export") => {
                // No sau.audit_bucket in this data directory.
                api.post_json(&path, &json!({})).await.expect_error(409, "conflict");
                continue;
            }
            ("PUT", "/api/v1/config") => api.put_json(&path, &json!({"daemon": {"scan_interval": "1h"}})).await,
            ("POST", "/api/v1/traffic/ingest") => {
                let flow = json!({"source": crn, "destination": "10.255.255.1", "bytes": 1, "start": 1, "end": 2});
                api.post_json(&path, &json!({ "records": [flow] })).await
            }
            ("POST", "/api/v1/policies") => {
                let rule = json!({"id": "listed", "condition": "cost > 1.0", "action": "warn", "message": ""});
                api.post_json(&path, &json!({ "rules": [rule] })).await
            }
            ("POST", "/api/v1/policies/toggle") => api.post_json(&path, &json!({"rule_id": "listed"})).await,
            ("POST", "/api/v1/policies/reorder") => api.post_json(&path, &json!({"order": ["listed"]})).await,
            ("POST", "/api/v1/policies/dry-run") => api.post_json(&path, &json!({"condition": "cost > 1.0"})).await,
            ("DELETE", "/api/v1/policies/{id}") => api.delete("/api/v1/policies/listed").await,
            ("POST", "/api/v1/remediation/approve") => api.post_json(&path, &item(0)).await,
            ("POST", "/api/v1/remediation/reject") => api.post_json(&path, &with(1, json!({"reason": "keep"}))).await,
            ("POST", "/api/v1/remediation/move") => api.post_json(&path, &with(2, json!({"to": "sau_gate"}))).await,
            ("POST", "/api/v1/remediation/override") => {
                api.post_json(&path, &with(2, json!({"reason": "ticket 1"}))).await
            }
            ("POST", "/api/v1/remediation/bulk") => {
                api.post_json(&path, &json!({"action": "reject", "items": [item(3)]}))
                    .await
            }
            ("POST", "/api/v1/remediation/quarantine") => {
                let r = api
                    .post_json(&path, &json!({"crn": crn, "action": "ISOLATE", "reason": "listed"}))
                    .await;
                quarantine_hash = s(&r.json["compensating_payload_hash"]).to_owned();
                r
            }
            ("POST", "/api/v1/remediation/revert") => api.post_json(&path, &json!({"hash": quarantine_hash})).await,
            ("POST", "/api/v1/isolation") => {
                api.post_json(&path, &json!({"crn": crn, "reason_code": "listed", "ttl_seconds": 0}))
                    .await
            }
            ("DELETE", p) if p.starts_with("/api/v1/isolation/") => api.delete(&path).await,
            ("POST", "/api/v1/tokens") => {
                api.post_json(&path, &json!({"name": "listed", "role": "viewer"}))
                    .await
                    .expect(201);
                continue;
            }
            ("DELETE", "/api/v1/tokens/{name}") => api.delete("/api/v1/tokens/listed").await,
            ("POST", "/api/v1/session") => api.post_json(&path, &json!({"token": d.token})).await,
            ("POST", "/api/v1/mcp") => {
                api.post_json(&path, &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
                    .await
            }
            ("POST", "/api/v1/cortex/assimilate") => {
                api.post_json(&path, &json!({"question": "what is the top waste?"}))
                    .await
            }
            ("DELETE", "/api/v1/session") => api.delete(&path).await,
            ("POST", _) => api.trigger(&path, &json!({"wait": true})).await,
            other => panic!("a route with an unexpected method: {other:?}"),
        };
        assert_eq!(r.status, 200, "{method} {path}: {}", r.text);
    }
    let v = api.get_ok("/api/v1/ledger/verify").await;
    assert_eq!(v["ok"], true);
}

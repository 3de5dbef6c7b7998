//! A small estate for the targets that need a graph to work on: a few
//! nodes of three providers with properties of every JSON kind, tags, a
//! verdict, and edges between them, landed as the host lands a plugin's
//! scan (through `svc_ingest::decode`).

use std::sync::Arc;

use svc_engine::graph::Verdict;
use svc_engine::{Crn, Graph, Interner};
use svc_ingest::decode::Decoder;
use svc_proto::provider::v1 as pb;

/// When the estate is observed (2026-01-01T00:00:00Z), in seconds.
pub const NOW: u64 = 1_767_225_600;
pub const NOW_US: u64 = NOW * 1_000_000;

pub const NODES: [(&str, &str, f64); 5] = [
    (
        "crn:svc:aws:us-east-1:123456789012:volume:vol-1",
        r#"{"state":"available","size_gb":100,"iops":3.5,"encrypted":false,"attachments":[],
            "nothing":null,"created_at":"2024-05-01T10:00:00Z","big":12345678901234567890,
            "neg":-7,"name":"données ✓","nested":{"a":{"b":[1,"x",true]}},
            "tags":{"env":"prod","owner":"alice"}}"#,
        12.5,
    ),
    (
        "crn:svc:aws:us-east-1:123456789012:instance:i-1",
        r#"{"state":"running","cpu":2,"creation_timestamp":1700000000,"tags":{}}"#,
        70.0,
    ),
    (
        "crn:svc:gcp:europe-west1:compute:disk:proj-1:d-1",
        r#"{"state":"READY","labels":["a","b"],"tags":{"env":"dev"}}"#,
        4.0,
    ),
    (
        "crn:svc:k8s:cluster-1:core:pod:default:web-1",
        r#"{"state":"Running","restarts":0,"ratio":0.25,"tags":{"app":"web"}}"#,
        0.0,
    ),
    (
        "crn:aws:eu-west-1:s3:bucket:123456789012:logs",
        r#"{"state":"active","versioning":true,"size_bytes":1e9}"#,
        1.25,
    ),
];

pub const EDGES: [(usize, usize, &str); 5] = [
    (0, 1, "ATTACHED_TO"),
    (1, 2, "USES"),
    (0, 2, "uses"),
    (3, 1, "RUNS_ON"),
    (4, 0, "PEERS_WITH"),
];

/// The estate's graph, its adjacency built, the first node marked waste.
pub fn graph() -> Graph {
    let interner = Arc::new(Interner::new());
    let response = pb::ScanResponse {
        nodes: NODES
            .iter()
            .map(|(crn, props, cost)| pb::Node {
                crn: (*crn).to_owned(),
                properties: props.as_bytes().to_vec(),
                cost: *cost,
            })
            .collect(),
        edges: EDGES
            .iter()
            .map(|&(a, b, rel)| pb::Edge {
                source_crn: NODES[a].0.to_owned(),
                target_crn: NODES[b].0.to_owned(),
                relation: rel.to_owned(),
            })
            .collect(),
    };
    let (mut nodes, mut edges) = Default::default();
    let mut decoder = Decoder::new(&interner);
    decoder.response(&response, &mut nodes, &mut edges);
    assert_eq!(
        decoder.stats.rejected_nodes + decoder.stats.rejected_edges,
        0,
        "{:?}",
        decoder.stats
    );
    let mut g = Graph::new(interner.clone());
    g.ingest_nodes(&[nodes], NOW_US - 86_400_000_000, 1);
    g.ingest_edges(&[edges], NOW_US - 86_400_000_000, 1);
    g.rebuild_adjacency(NOW_US);
    let first = Crn::parse(NODES[0].0).expect("a CRN");
    let id = g.find(&first).expect("the first node");
    let rule = interner.intern("aws-ebs-unattached");
    g.set_verdict(
        id,
        &Verdict {
            is_waste: true,
            reason: "unattached",
            rule: Some(rule),
        },
        NOW_US,
    );
    g
}

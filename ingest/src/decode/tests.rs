use std::sync::Arc;

use svc_engine::props::ValueRef;
use svc_engine::{Graph, Relation};

use super::*;

fn node(crn: &str, props: &str, cost: f64) -> pb::Node {
    pb::Node {
        crn: crn.into(),
        properties: props.as_bytes().to_vec(),
        cost,
    }
}

fn edge(a: &str, b: &str, rel: &str) -> pb::Edge {
    pb::Edge {
        source_crn: a.into(),
        target_crn: b.into(),
        relation: rel.into(),
    }
}

const VOL: &str = "crn:svc:aws:us-east-1:123456789012:volume:vol-1";
const VM: &str = "crn:svc:aws:us-east-1:123456789012:instance:i-1";
const SUBNET: &str = "crn:svc:aws:us-east-1:ec2:subnet:123456789012:subnet-1";

fn ingest(resp: &pb::ScanResponse) -> (Graph, DecodeStats, Arc<Interner>) {
    let i = Arc::new(Interner::new());
    let mut d = Decoder::new(&i);
    let (mut nodes, mut edges) = (NodeBatch::default(), EdgeBatch::default());
    d.response(resp, &mut nodes, &mut edges);
    let stats = d.stats.clone();
    let mut g = Graph::new(i.clone());
    g.ingest_nodes(&[nodes], 1, 1);
    let e = g.ingest_edges(&[edges], 1, 1);
    assert_eq!(e.dangling, 0);
    g.rebuild_adjacency(1);
    (g, stats, i)
}

#[test]
fn nodes_keep_typed_properties_and_fill_the_columns() {
    let props = r#"{"state":"available","size_gib":500,"iops":3000.5,"encrypted":true,"kms":null,
        "volume_type":"gp2","attachments":[{"id":"i-1"}],"created_at":"2024-05-01T10:00:00Z",
        "tags":{"env":"prod","owner":"alice","count":3}}"#;
    let resp = pb::ScanResponse {
        nodes: vec![node(VOL, props, 40.0)],
        edges: vec![],
    };
    let (g, stats, i) = ingest(&resp);
    assert_eq!((stats.nodes, stats.rejected_nodes), (1, 0));
    let id = g
        .find(&Crn::parse("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1").unwrap())
        .unwrap();
    let n = g.node(id).unwrap();
    assert_eq!(
        &*i.resolve(n.ty()),
        "ec2:volume",
        "plugin form converted to the graph form"
    );
    assert_eq!(&*i.resolve(n.state()), "available");
    assert_eq!(n.cost_usd_mo(), 40.0);
    assert_eq!(n.creation_ts(), 1_714_557_600);
    let p = n.props();
    assert_eq!(p.get(i.intern("size_gib")), Some(ValueRef::Int(500)));
    assert_eq!(p.get(i.intern("iops")), Some(ValueRef::Float(3000.5)));
    assert_eq!(p.get(i.intern("encrypted")), Some(ValueRef::Bool(true)));
    assert_eq!(p.get(i.intern("kms")), Some(ValueRef::Null));
    assert_eq!(
        p.get(i.intern("state")),
        Some(ValueRef::Str("available")),
        "state stays a property"
    );
    assert_eq!(
        p.get(i.intern("attachments")),
        Some(ValueRef::Json(r#"[{"id":"i-1"}]"#))
    );
    assert_eq!(p.get(i.intern("tags")), None, "tags live in their own column");
    let tags: Vec<(String, String)> = n
        .tags()
        .map(|(k, v)| (i.resolve(k).to_string(), i.resolve(v).to_string()))
        .collect();
    assert_eq!(
        tags,
        vec![
            ("count".into(), "3".into()),
            ("env".into(), "prod".into()),
            ("owner".into(), "alice".into())
        ]
    );
}

#[test]
fn malformed_nodes_are_rejected_with_a_reason_and_the_rest_land() {
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(MAX_PROPERTIES_BYTES));
    let resp = pb::ScanResponse {
        nodes: vec![
            node("crn:svc:aws", "{}", 1.0),
            node(VOL, "{}", f64::NAN),
            node(VOL, "{}", f64::INFINITY),
            node(VOL, "{}", -1.0),
            node(VOL, "{not json", 1.0),
            node(VOL, "[1,2]", 1.0),
            node(VOL, &big, 1.0),
            node(VM, "", 70.0),
        ],
        edges: vec![],
    };
    let (g, stats, _) = ingest(&resp);
    assert_eq!((stats.nodes, stats.rejected_nodes), (1, 7));
    assert_eq!(g.node_rows(), 1);
    let reasons = stats.reasons.join("\n");
    for want in [
        "expected 8 segments",
        "cost NaN",
        "cost inf",
        "cost -1",
        "not valid JSON",
        "not an array",
        "exceed",
    ] {
        assert!(reasons.contains(want), "{want:?} in\n{reasons}");
    }
    let vm = g.node(g.nodes().next().unwrap().id()).unwrap();
    assert_eq!(vm.cost_usd_mo(), 70.0);
    assert_eq!(vm.creation_ts(), 0);
}

#[test]
fn edges_map_relations_reverse_and_keep_the_original() {
    let resp = pb::ScanResponse {
        nodes: vec![node(VOL, "{}", 1.0), node(VM, "{}", 1.0), node(SUBNET, "{}", 0.0)],
        edges: vec![
            edge(VOL, VM, "ATTACHED_TO"),
            edge(VM, SUBNET, "MEMBER_OF"),
            edge(VM, VOL, "PEERS_WITH"),
            edge("crn:bad", VM, "USES"),
        ],
    };
    let (g, stats, i) = ingest(&resp);
    assert_eq!((stats.edges, stats.rejected_edges), (3, 1));
    assert_eq!(stats.unknown_relations.get("PEERS_WITH"), Some(&1));
    let rel = i.intern("relation");
    let mut seen: Vec<(String, String, Relation, String)> = g
        .edges()
        .map(|e| {
            let original = match e.props().get(rel) {
                Some(ValueRef::Str(s)) => s.to_owned(),
                other => panic!("relation property: {other:?}"),
            };
            (g.crn(e.source()), g.crn(e.target()), e.relation(), original)
        })
        .collect();
    seen.sort();
    let vol = "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-1".to_string();
    let vm = "crn:svc:aws:us-east-1:ec2:instance:123456789012:i-1".to_string();
    let mut want = vec![
        (vol.clone(), vm.clone(), Relation::AttachedTo, "ATTACHED_TO".to_string()),
        (
            SUBNET.to_string(),
            vm.clone(),
            Relation::Contains,
            "MEMBER_OF".to_string(),
        ),
        (vm.clone(), vol.clone(), Relation::Uses, "PEERS_WITH".to_string()),
    ];
    want.sort();
    assert_eq!(seen, want);
}

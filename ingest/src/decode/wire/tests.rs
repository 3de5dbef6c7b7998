//! The view against prost: what prost decodes, the view reads the same;
//! what prost refuses, the view refuses; nothing panics.

use proptest::prelude::*;
use prost::Message;
use svc_proto::provider::v1 as pb;

use super::*;

type Owned = (Vec<(String, Vec<u8>, u64)>, Vec<(String, String, String)>);

/// Everything the view yields, owned, nodes and edges apart (as prost
/// keeps them); CRNs and relations checked as the decoder checks them.
fn view(bytes: &[u8]) -> Result<Owned, WireError> {
    let (mut nodes, mut edges) = (Vec::new(), Vec::new());
    for item in items(bytes) {
        match item? {
            Item::Node(n) => nodes.push((node_str(n.crn, 1)?.to_owned(), n.properties.to_vec(), n.cost.to_bits())),
            Item::Edge(e) => edges.push((
                edge_str(e.source_crn, 1)?.to_owned(),
                edge_str(e.target_crn, 2)?.to_owned(),
                edge_str(e.relation, 3)?.to_owned(),
            )),
        }
    }
    Ok((nodes, edges))
}

fn owned(r: &pb::ScanResponse) -> Owned {
    (
        r.nodes
            .iter()
            .map(|n| (n.crn.clone(), n.properties.clone(), n.cost.to_bits()))
            .collect(),
        r.edges
            .iter()
            .map(|e| (e.source_crn.clone(), e.target_crn.clone(), e.relation.clone()))
            .collect(),
    )
}

/// The view and prost agree on `bytes`: both refuse it, or both read the same.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    match (pb::ScanResponse::decode(bytes), view(bytes)) {
        (Ok(want), Ok(got)) => prop_assert_eq!(got, owned(&want)),
        (Err(_), Err(_)) => {}
        (want, got) => prop_assert!(false, "prost: {want:?}, view: {got:?}"),
    }
    Ok(())
}

fn key(field: u32, wire: u8, out: &mut Vec<u8>) {
    varint(u64::from(field) << 3 | u64::from(wire), out);
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn len_field(field: u32, body: &[u8], out: &mut Vec<u8>) {
    key(field, LEN, out);
    varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

fn response() -> pb::ScanResponse {
    pb::ScanResponse {
        nodes: vec![
            pb::Node {
                crn: "crn:svc:aws:us-east-1:123456789012:volume:vol-1".into(),
                properties: br#"{"size_gb":100}"#.to_vec(),
                cost: 8.5,
            },
            pb::Node::default(),
        ],
        edges: vec![pb::Edge {
            source_crn: "crn:a".into(),
            target_crn: "crn:b".into(),
            relation: "ATTACHED_TO".into(),
        }],
    }
}

#[test]
fn reads_what_prost_encodes() {
    let r = response();
    assert_eq!(view(&r.encode_to_vec()), Ok(owned(&r)));
    assert_eq!(view(&[]), Ok((vec![], vec![])), "an empty response");
}

#[test]
fn borrows_from_the_message() {
    let bytes = response().encode_to_vec();
    let Some(Ok(Item::Node(n))) = items(&bytes).next() else {
        panic!("a node first");
    };
    let range = bytes.as_ptr_range();
    assert!(range.contains(&n.crn.as_ptr()) && range.contains(&n.properties.as_ptr()));
}

#[test]
fn unknown_fields_repeats_and_order_are_read_as_prost_reads_them() {
    let mut node = Vec::new();
    key(9, VARINT, &mut node);
    varint(300, &mut node);
    len_field(1, b"first", &mut node);
    key(7, FIXED32, &mut node);
    node.extend_from_slice(&[1, 2, 3, 4]);
    key(3, FIXED64, &mut node);
    node.extend_from_slice(&2.5f64.to_le_bytes());
    len_field(1, b"crn:last", &mut node);
    // A group holding a nested group and a varint.
    key(12, START_GROUP, &mut node);
    key(13, START_GROUP, &mut node);
    key(1, VARINT, &mut node);
    varint(1, &mut node);
    key(13, END_GROUP, &mut node);
    key(12, END_GROUP, &mut node);
    let mut edge = Vec::new();
    len_field(3, b"USES", &mut edge);
    len_field(2, b"crn:b", &mut edge);
    let mut msg = Vec::new();
    len_field(2, &edge, &mut msg);
    len_field(5, b"unknown", &mut msg);
    len_field(1, &node, &mut msg);
    len_field(2, &[], &mut msg);
    let (nodes, edges) = view(&msg).expect("valid");
    assert_eq!(nodes, vec![("crn:last".to_owned(), vec![], 2.5f64.to_bits())]);
    assert_eq!(edges.len(), 2);
    assert_eq!(edges[0], (String::new(), "crn:b".to_owned(), "USES".to_owned()));
    agree(&msg).expect("prost agrees");
}

#[test]
fn refuses_what_prost_refuses() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated length", vec![0x0a, 0x05, 0x0a]),
        ("field number 0", vec![0x02, 0x00]),
        ("wire type 7", vec![0x0f]),
        (
            "overlong varint",
            vec![0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
        ),
        ("nodes as a varint", vec![0x08, 0x01]),
        ("crn as fixed64", vec![0x0a, 0x09, 0x09, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("cost as a varint", vec![0x0a, 0x02, 0x18, 0x01]),
        ("crn not UTF-8", vec![0x0a, 0x03, 0x0a, 0x01, 0xff]),
        ("relation not UTF-8", vec![0x12, 0x04, 0x1a, 0x02, 0xc3, 0x28]),
        ("unmatched group end", vec![0x2c]),
        ("group closed by another", vec![0x2b, 0x34]),
        ("unclosed group", vec![0x2b]),
        ("truncated cost", vec![0x0a, 0x05, 0x19, 0, 0, 0, 0]),
    ];
    for (what, bytes) in cases {
        assert!(pb::ScanResponse::decode(&bytes[..]).is_err(), "prost accepts {what}");
        assert!(view(&bytes).is_err(), "the view accepts {what}");
    }
    let mut deep = Vec::new();
    for _ in 0..RECURSION_LIMIT + 1 {
        key(5, START_GROUP, &mut deep);
    }
    for _ in 0..RECURSION_LIMIT + 1 {
        key(5, END_GROUP, &mut deep);
    }
    assert_eq!(view(&deep), Err(WireError::TooDeep));
    assert!(pb::ScanResponse::decode(&deep[..]).is_err());
}

#[test]
fn iteration_stops_at_the_first_error() {
    let mut msg = response().encode_to_vec();
    msg.push(0x0f);
    let results: Vec<_> = items(&msg).collect();
    assert_eq!(results.len(), 4);
    assert!(results[..3].iter().all(Result::is_ok) && results[3].is_err());
}

fn arb_node() -> impl Strategy<Value = pb::Node> {
    (
        ".{0,40}",
        prop::collection::vec(any::<u8>(), 0..64),
        prop_oneof![any::<f64>(), Just(f64::NAN), Just(0.0), Just(-1.0)],
    )
        .prop_map(|(crn, properties, cost)| pb::Node { crn, properties, cost })
}

fn arb_edge() -> impl Strategy<Value = pb::Edge> {
    (".{0,30}", ".{0,30}", "[A-Z_]{0,12}").prop_map(|(source_crn, target_crn, relation)| pb::Edge {
        source_crn,
        target_crn,
        relation,
    })
}

fn arb_response() -> impl Strategy<Value = pb::ScanResponse> {
    (
        prop::collection::vec(arb_node(), 0..8),
        prop::collection::vec(arb_edge(), 0..8),
    )
        .prop_map(|(nodes, edges)| pb::ScanResponse { nodes, edges })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trips_prost_encoding(r in arb_response()) {
        let bytes = r.encode_to_vec();
        // What prost reads back (proto3 drops a cost of -0.0 as a default).
        let back = pb::ScanResponse::decode(bytes.as_slice()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(view(&bytes), Ok(owned(&back)));
        prop_assert_eq!(back.nodes.len(), r.nodes.len());
    }

    #[test]
    fn every_prefix_agrees_with_prost(r in arb_response(), cut in any::<prop::sample::Index>()) {
        let bytes = r.encode_to_vec();
        let cut = cut.index(bytes.len() + 1);
        agree(&bytes[..cut])?;
    }

    #[test]
    fn flipped_bytes_agree_with_prost(r in arb_response(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut bytes = r.encode_to_vec();
        if !bytes.is_empty() {
            for (at, v) in flips {
                let at = at.index(bytes.len());
                bytes[at] = v;
            }
        }
        agree(&bytes)?;
    }

    #[test]
    fn garbage_agrees_with_prost(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        agree(&bytes)?;
    }

    #[test]
    fn garbage_of_plausible_keys_agrees_with_prost(parts in prop::collection::vec((1u32..6, 0u8..6, prop::collection::vec(any::<u8>(), 0..6)), 0..24)) {
        let mut bytes = Vec::new();
        for (field, wire, tail) in parts {
            key(field, wire, &mut bytes);
            bytes.extend_from_slice(&tail);
        }
        agree(&bytes)?;
    }
}

//! Round trips, verifier refusals and the staleness check of the generated code.

use super::*;
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn enc(nodes: &[FbNode], edges: &[FbEdge], version: u32, last_updated: u64) -> Vec<u8> {
    encode_graph(&FbGraph {
        nodes: nodes.to_vec(),
        edges: edges.to_vec(),
        version,
        last_updated,
    })
}

fn dec(bytes: &[u8]) -> Result<(Vec<FbNode>, Vec<FbEdge>, u32, u64), InvalidFlatbuffer> {
    decode_graph(bytes).map(|g| (g.nodes, g.edges, g.version, g.last_updated))
}

fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn sample() -> (Vec<FbNode>, Vec<FbEdge>) {
    let nodes = vec![
        FbNode {
            crn: "crn:svc:aws:us-east-1:ec2:instance:123456789012:i-0abc".into(),
            ty: "ec2:instance".into(),
            state: "running".into(),
            cost_usd_mo: 70.08,
            properties: props(&[("instance_type", "t3.large"), ("Name", "web-1")]),
            creation_timestamp: 1_700_000_000,
            valid_to: 0,
        },
        FbNode {
            crn: "crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-0def".into(),
            ty: "ec2:volume".into(),
            state: "available".into(),
            cost_usd_mo: 8.0,
            properties: props(&[("size_gb", "100"), ("", ""), ("empty_value", "")]),
            creation_timestamp: 1_690_000_000,
            valid_to: 1_710_000_000,
        },
        FbNode {
            crn: "crn:svc:gcp:europe-west1:compute:disk:projet-été:disque-ü-😀".into(),
            ty: "compute:disk".into(),
            state: String::new(),
            cost_usd_mo: 0.0,
            properties: props(&[("étiquette", "値"), ("emoji", "🚀✨")]),
            creation_timestamp: u64::MAX,
            valid_to: 0,
        },
        FbNode {
            crn: String::new(),
            ty: String::new(),
            state: String::new(),
            cost_usd_mo: f32::MAX,
            properties: Vec::new(),
            creation_timestamp: 0,
            valid_to: 0,
        },
    ];
    let edges = vec![
        FbEdge {
            source_crn: nodes[1].crn.clone(),
            target_crn: nodes[0].crn.clone(),
            relationship: EdgeRelationship::AttachedTo.0,
            properties: props(&[("device", "/dev/sdf")]),
            valid_to: 0,
        },
        FbEdge {
            source_crn: nodes[0].crn.clone(),
            target_crn: "crn:svc:aws:us-east-1:ec2:security-group:123456789012:sg-1".into(),
            relationship: EdgeRelationship::SecuredBy.0,
            properties: Vec::new(),
            valid_to: 1_720_000_000,
        },
        FbEdge {
            source_crn: nodes[2].crn.clone(),
            target_crn: String::new(),
            relationship: EdgeRelationship::Uses.0,
            properties: props(&[("ключ", ""), ("", "значение")]),
            valid_to: 0,
        },
        FbEdge {
            source_crn: "a".into(),
            target_crn: "b".into(),
            relationship: 200,
            properties: Vec::new(),
            valid_to: u64::MAX,
        },
    ];
    (nodes, edges)
}

fn sorted_by_crn(mut nodes: Vec<FbNode>) -> Vec<FbNode> {
    nodes.sort_by(|a, b| a.crn.cmp(&b.crn));
    nodes
}

/// Equal as stored: identical bits, except that `-0.0` reads back as `0.0`.
fn same_cost(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a == 0.0 && b == 0.0)
}

fn assert_nodes_eq(got: &[FbNode], want: &[FbNode]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            same_cost(g.cost_usd_mo, w.cost_usd_mo),
            "cost {} != {}",
            g.cost_usd_mo,
            w.cost_usd_mo
        );
        let g = FbNode {
            cost_usd_mo: 0.0,
            ..g.clone()
        };
        let w = FbNode {
            cost_usd_mo: 0.0,
            ..w.clone()
        };
        assert_eq!(g, w);
    }
}

#[test]
fn round_trip_sample_graph() {
    let (nodes, edges) = sample();
    let bytes = enc(&nodes, &edges, 7, 1_733_000_000);
    assert!(graph_buffer_has_identifier(&bytes));
    let (n, e, version, last_updated) = dec(&bytes).expect("valid buffer");
    assert_nodes_eq(&n, &sorted_by_crn(nodes));
    assert_eq!(e, edges);
    assert_eq!(version, 7);
    assert_eq!(last_updated, 1_733_000_000);
}

#[test]
fn round_trip_empty_graph() {
    let bytes = enc(&[], &[], 0, 0);
    let (n, e, version, last_updated) = dec(&bytes).expect("valid buffer");
    assert!(n.is_empty());
    assert!(e.is_empty());
    assert_eq!((version, last_updated), (0, 0));
}

#[test]
fn nodes_are_sorted_for_key_lookup() {
    let (nodes, edges) = sample();
    let bytes = enc(&nodes, &edges, 1, 1);
    let root = verified_root(&bytes).expect("valid buffer");
    let list = root.nodes().expect("nodes present");
    for n in &nodes {
        let found = list
            .lookup_by_key(n.crn.as_str(), |node, key| node.key_compare_with_value(key))
            .expect("node found by key");
        assert_eq!(found.type_(), n.ty);
    }
    assert!(
        list.lookup_by_key("crn:svc:none", |node, key| node.key_compare_with_value(key))
            .is_none()
    );
}

#[test]
fn generated_enum_matches_spec_values() {
    let expected = [
        ("AttachedTo", 0u8),
        ("SecuredBy", 1),
        ("Contains", 2),
        ("Runs", 3),
        ("FlowsTo", 4),
        ("Grants", 5),
        ("Uses", 6),
    ];
    assert_eq!(EdgeRelationship::ENUM_VALUES.len(), expected.len());
    for (name, value) in expected {
        assert_eq!(EdgeRelationship(value).variant_name(), Some(name));
    }
    assert_eq!(GRAPH_IDENTIFIER, "SVCG");
}

#[test]
fn garbage_is_rejected() {
    let cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        vec![0],
        vec![0xff; 3],
        vec![0xff; 64],
        b"SVCG".to_vec(),
        b"not a flatbuffer at all, just some text".to_vec(),
        {
            // Root offset pointing far outside the buffer.
            let mut v = vec![0u8; 16];
            v[..4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
            v
        },
    ];
    for bytes in cases {
        assert!(dec(&bytes).is_err(), "accepted {bytes:?}");
    }
    // All zeros happen to be a valid empty `Graph` table: the file
    // identifier is optional in FlatBuffers, so it is not required here.
    let (n, e, v, t) = dec(&[0; 64]).expect("empty table");
    assert!(n.is_empty() && e.is_empty() && v == 0 && t == 0);
}

#[test]
fn truncated_and_corrupted_buffers_never_panic() {
    let (nodes, edges) = sample();
    let bytes = enc(&nodes, &edges, 3, 4);
    for len in 0..bytes.len() {
        // Truncation either fails verification or, rarely, still yields
        // a valid buffer; it must not panic.
        let _ = dec(&bytes[..len]);
    }
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut corrupt = bytes.clone();
            corrupt[i] ^= flip;
            let _ = dec(&corrupt);
        }
    }
}

#[test]
fn missing_required_field_is_rejected() {
    // The generated builders refuse to finish a node without its required
    // `type`, so write a `Property` table where a node belongs: its first
    // slot reads as `crn`, and the second (`type`) is absent.
    let mut fbb = FlatBufferBuilder::new();
    let key = fbb.create_string("crn:svc:x");
    let prop = Property::create(
        &mut fbb,
        &PropertyArgs {
            key: Some(key),
            value: None,
        },
    );
    let list = fbb.create_vector(&[prop]);
    let root = Graph::create(
        &mut fbb,
        &GraphArgs {
            nodes: Some(WIPOffset::new(list.value())),
            ..GraphArgs::default()
        },
    );
    finish_graph_buffer(&mut fbb, root);
    let err = dec(fbb.finished_data()).expect_err("node without type");
    assert!(matches!(err, InvalidFlatbuffer::MissingRequiredField { .. }), "{err}");
}

/// Fails when schemas/graph.fbs or any generated file (the Rust here, the
/// TypeScript in web/src/fbs/) changed without running schemas/regen.sh,
/// or when the stamp names another flatc. Needs no flatc.
#[test]
fn generated_code_is_fresh() {
    let recorded = include_str!("graph.fbs.sha256");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    assert!(
        recorded.starts_with("# flatc version 25.12.19;"),
        "graph.fbs.sha256 names another flatc: run schemas/regen.sh"
    );
    let entries: Vec<(&str, &str)> = recorded
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|line| {
            let (sum, file) = line.split_once(char::is_whitespace)?;
            Some((sum, file.trim_start().trim_start_matches('*')))
        })
        .collect();
    // Every TypeScript file is stamped, and nothing else is there.
    let mut ts = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(format!("{root}/web/src/fbs"))];
    while let Some(dir) = dirs.pop() {
        let list = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
        for entry in list.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(rel) = path.strip_prefix(root) {
                ts.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    ts.sort();
    let mut stamped_ts: Vec<String> = entries
        .iter()
        .filter(|(_, f)| f.starts_with("web/src/fbs/"))
        .map(|(_, f)| (*f).to_owned())
        .collect();
    stamped_ts.sort();
    assert_eq!(ts, stamped_ts, "web/src/fbs/ changed: run schemas/regen.sh");
    assert!(!ts.is_empty(), "no TypeScript in web/src/fbs/: run schemas/regen.sh");
    let generated: &[u8] = include_bytes!("graph_generated.rs");
    for name in ["schemas/graph.fbs", "api/src/fbs/graph_generated.rs"] {
        assert!(
            entries.iter().any(|(_, f)| *f == name),
            "graph.fbs.sha256 has no entry for {name}: run schemas/regen.sh"
        );
    }
    for (want, name) in entries {
        let bytes = if name == "api/src/fbs/graph_generated.rs" {
            generated.to_vec()
        } else {
            let path = format!("{root}/{name}");
            std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
        };
        let got = hex::encode(Sha256::digest(&bytes));
        assert_eq!(got, want, "{name} changed: run schemas/regen.sh");
    }
}

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z0-9:/_-]{0,24}", any::<String>(),]
}

fn arb_props() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((arb_string(), arb_string()), 0..4)
}

fn arb_node() -> impl Strategy<Value = FbNode> {
    (
        arb_string(),
        arb_string(),
        arb_string(),
        any::<f32>(),
        arb_props(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(
            |(crn, ty, state, cost_usd_mo, properties, creation_timestamp, valid_to)| FbNode {
                crn,
                ty,
                state,
                cost_usd_mo,
                properties,
                creation_timestamp,
                valid_to,
            },
        )
}

fn arb_edge() -> impl Strategy<Value = FbEdge> {
    (arb_string(), arb_string(), any::<u8>(), arb_props(), any::<u64>()).prop_map(
        |(source_crn, target_crn, relationship, properties, valid_to)| FbEdge {
            source_crn,
            target_crn,
            relationship,
            properties,
            valid_to,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn round_trip_arbitrary_graphs(
        nodes in prop::collection::vec(arb_node(), 0..12),
        edges in prop::collection::vec(arb_edge(), 0..12),
        version in any::<u32>(),
        last_updated in any::<u64>(),
    ) {
        let bytes = enc(&nodes, &edges, version, last_updated);
        let (n, e, v, t) = dec(&bytes).expect("valid buffer");
        assert_nodes_eq(&n, &sorted_by_crn(nodes));
        prop_assert_eq!(e, edges);
        prop_assert_eq!(v, version);
        prop_assert_eq!(t, last_updated);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = dec(&bytes);
    }
}

/// The encoder as the routes use it: edges point at their nodes' CRN
/// strings, repeated text is written once; every field reads back.
#[test]
fn encoder_shares_crns_and_repeated_text() {
    let (nodes, _) = sample();
    let mut nodes = sorted_by_crn(nodes);
    nodes.retain(|n| !n.crn.is_empty());
    let mut enc = GraphEncoder::with_capacity(0, nodes.len(), 4);
    let mut crns = Vec::new();
    for n in &nodes {
        let crn = enc.string(&n.crn);
        crns.push(crn);
        let ty = enc.shared(&n.ty);
        let state = (!n.state.is_empty()).then(|| enc.shared(&n.state));
        let props: Vec<(Str, Str)> = n
            .properties
            .iter()
            .map(|(k, v)| (enc.shared(k), enc.shared(v)))
            .collect();
        enc.node(&NodeFields {
            crn,
            ty,
            state,
            cost_usd_mo: n.cost_usd_mo,
            properties: &props,
            creation_timestamp: n.creation_timestamp,
            valid_to: n.valid_to,
        });
    }
    let key = enc.shared("k");
    let before = enc.len();
    for (i, s) in crns.iter().enumerate() {
        let t = crns[(i + 1) % crns.len()];
        enc.edge(&EdgeFields {
            source_crn: *s,
            target_crn: t,
            relationship: (i % 7) as u8,
            properties: &[(key, key)],
            valid_to: i as u64,
        });
    }
    // Four edges without a string of their own: tables and lists only.
    assert!(
        enc.len() - before < 4 * 64,
        "{} bytes for four edges",
        enc.len() - before
    );
    assert!(!enc.is_empty());
    let finished = enc.finish(9, 10);
    let bytes = finished.bytes().to_vec();
    assert_eq!(finished.into_vec(), bytes);
    let g = decode_graph(&bytes).expect("valid buffer");
    assert_nodes_eq(&g.nodes, &nodes);
    let edges: Vec<FbEdge> = (0..nodes.len())
        .map(|i| FbEdge {
            source_crn: nodes[i].crn.clone(),
            target_crn: nodes[(i + 1) % nodes.len()].crn.clone(),
            relationship: (i % 7) as u8,
            properties: vec![("k".into(), "k".into())],
            valid_to: i as u64,
        })
        .collect();
    assert_eq!(g.edges, edges);
    assert_eq!((g.version, g.last_updated), (9, 10));
    assert!(graph_buffer_has_identifier(&bytes));
}

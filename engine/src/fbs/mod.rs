//! The binary graph form (SPEC 2.4): FlatBuffers schema `schemas/graph.fbs`,
//! namespace `Graph`, file identifier `SVCG`.
//!
//! It carries graph snapshots to plugins without copying and backs the
//! memory-mapped snapshot read at start-up. The generated accessors and
//! builders ([`Graph`], [`Node`], [`Edge`], [`Property`], [`EdgeRelationship`],
//! ...) are re-exported from `graph_generated.rs`, which
//! `schemas/regen.sh` writes; never edit it by hand.
//!
//! For everyday use there are two safe helpers over plain owned structs:
//! [`encode_graph`] builds a finished buffer and [`decode_graph`] verifies
//! one and copies it out. [`verified_root`] gives zero-copy access to a
//! verified buffer. None of them panics on malformed input.

#[allow(
    unsafe_code,
    clippy::all,
    clippy::pedantic,
    dead_code,
    deprecated,
    unused_imports,
    mismatched_lifetime_syntaxes,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals
)]
#[rustfmt::skip]
mod graph_generated;

pub use graph_generated::graph::*;

use flatbuffers::{FlatBufferBuilder, ForwardsUOffset, InvalidFlatbuffer, Vector, VerifierOptions, WIPOffset};

/// A node in owned form, the fields of the `Node` table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FbNode {
    /// Stable unique resource name; the table key.
    pub crn: String,
    /// Resource type, for example `ec2:volume`.
    pub ty: String,
    /// Provider-reported lifecycle state; empty when unknown.
    pub state: String,
    /// Estimated monthly cost in USD.
    pub cost_usd_mo: f32,
    /// Provider-specific attributes as key/value strings, in order.
    pub properties: Vec<(String, String)>,
    /// Unix epoch seconds of resource creation.
    pub creation_timestamp: u64,
    /// Logical deletion timestamp; 0 means active.
    pub valid_to: u64,
}

/// An edge in owned form, the fields of the `Edge` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FbEdge {
    /// CRN of the source node (A).
    pub source_crn: String,
    /// CRN of the target node (B).
    pub target_crn: String,
    /// `EdgeRelationship` value (SPEC 2.3: 0 AttachedTo ... 6 Uses). Values
    /// outside the enumeration are carried unchanged.
    pub relationship: u8,
    /// Edge attributes as key/value strings, in order.
    pub properties: Vec<(String, String)>,
    /// Isolation boundary; 0 means active.
    pub valid_to: u64,
}

/// A decoded graph: nodes, edges, `version` and `last_updated`.
pub type DecodedGraph = (Vec<FbNode>, Vec<FbEdge>, u32, u64);

type PropertyList<'a> = WIPOffset<Vector<'a, ForwardsUOffset<Property<'a>>>>;

/// Builds a finished `Graph` buffer (with file identifier `SVCG`).
///
/// Nodes are written sorted by CRN (byte order; equal CRNs keep their
/// relative order) because `crn` is the table key, so readers can use
/// `Vector::lookup_by_key`. Edges are written in the given order. Strings
/// are deduplicated in the buffer. Empty optional strings (`state`, property
/// keys and values) are left out and read back as empty strings; a cost of
/// `-0.0` reads back as `0.0`.
///
/// # Panics
///
/// When the buffer would exceed the FlatBuffers limit of 2 GiB.
#[must_use]
pub fn encode_graph(nodes: &[FbNode], edges: &[FbEdge], version: u32, last_updated: u64) -> Vec<u8> {
    let estimate = 64
        + nodes
            .iter()
            .map(|n| 64 + n.crn.len() + n.ty.len() + n.state.len() + props_size(&n.properties))
            .sum::<usize>()
        + edges
            .iter()
            .map(|e| 48 + e.source_crn.len() + e.target_crn.len() + props_size(&e.properties))
            .sum::<usize>();
    let mut fbb = FlatBufferBuilder::with_capacity(estimate.min(1 << 30));
    let mut scratch: Vec<WIPOffset<Property<'_>>> = Vec::new();

    let mut order: Vec<usize> = (0..nodes.len()).collect();
    if !nodes.is_sorted_by(|a, b| a.crn <= b.crn) {
        order.sort_by(|&a, &b| nodes[a].crn.cmp(&nodes[b].crn));
    }

    let mut node_offsets = Vec::with_capacity(nodes.len());
    for &i in &order {
        let n = &nodes[i];
        let crn = fbb.create_shared_string(&n.crn);
        let type_ = fbb.create_shared_string(&n.ty);
        let state = optional_string(&mut fbb, &n.state);
        let properties = write_properties(&mut fbb, &mut scratch, &n.properties);
        node_offsets.push(Node::create(
            &mut fbb,
            &NodeArgs {
                crn: Some(crn),
                type_: Some(type_),
                state,
                cost_usd_mo: n.cost_usd_mo,
                properties,
                creation_timestamp: n.creation_timestamp,
                valid_to: n.valid_to,
            },
        ));
    }
    let nodes_vec = fbb.create_vector(&node_offsets);
    drop(node_offsets);

    let mut edge_offsets = Vec::with_capacity(edges.len());
    for e in edges {
        let source_crn = fbb.create_shared_string(&e.source_crn);
        let target_crn = fbb.create_shared_string(&e.target_crn);
        let properties = write_properties(&mut fbb, &mut scratch, &e.properties);
        edge_offsets.push(Edge::create(
            &mut fbb,
            &EdgeArgs {
                source_crn: Some(source_crn),
                target_crn: Some(target_crn),
                relationship: EdgeRelationship(e.relationship),
                properties,
                valid_to: e.valid_to,
            },
        ));
    }
    let edges_vec = fbb.create_vector(&edge_offsets);
    drop(edge_offsets);

    let root = Graph::create(
        &mut fbb,
        &GraphArgs {
            nodes: Some(nodes_vec),
            edges: Some(edges_vec),
            version,
            last_updated,
        },
    );
    finish_graph_buffer(&mut fbb, root);
    let (mut buf, head) = fbb.collapse();
    buf.drain(..head);
    buf
}

/// Verifies `bytes` as a `Graph` buffer and returns its root for zero-copy
/// reads.
///
/// The verifier's table limit grows with the buffer (a table takes at least
/// four bytes), so large snapshots are accepted while the work stays
/// proportional to the input. The file identifier is not required.
///
/// # Errors
///
/// Returns the verifier's error when `bytes` is not a valid `Graph` buffer,
/// including a missing required field (`crn`, `type`, `source_crn`,
/// `target_crn`).
pub fn verified_root(bytes: &[u8]) -> Result<Graph<'_>, InvalidFlatbuffer> {
    let defaults = VerifierOptions::default();
    let opts = VerifierOptions {
        max_tables: defaults.max_tables.max(bytes.len() / 4),
        ..defaults
    };
    root_as_graph_with_opts(&opts, bytes)
}

/// Verifies a `Graph` buffer and copies it into owned structs.
///
/// Absent strings and lists read as empty; nodes and edges come back in
/// buffer order. Never panics, whatever the input.
///
/// # Errors
///
/// Returns the verifier's error when `bytes` is not a valid `Graph` buffer.
pub fn decode_graph(bytes: &[u8]) -> Result<DecodedGraph, InvalidFlatbuffer> {
    let g = verified_root(bytes)?;
    let nodes = g
        .nodes()
        .map(|v| {
            v.iter()
                .map(|n| FbNode {
                    crn: n.crn().to_owned(),
                    ty: n.type_().to_owned(),
                    state: n.state().unwrap_or_default().to_owned(),
                    cost_usd_mo: n.cost_usd_mo(),
                    properties: read_properties(n.properties()),
                    creation_timestamp: n.creation_timestamp(),
                    valid_to: n.valid_to(),
                })
                .collect()
        })
        .unwrap_or_default();
    let edges = g
        .edges()
        .map(|v| {
            v.iter()
                .map(|e| FbEdge {
                    source_crn: e.source_crn().to_owned(),
                    target_crn: e.target_crn().to_owned(),
                    relationship: e.relationship().0,
                    properties: read_properties(e.properties()),
                    valid_to: e.valid_to(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok((nodes, edges, g.version(), g.last_updated()))
}

fn props_size(props: &[(String, String)]) -> usize {
    props.iter().map(|(k, v)| 24 + k.len() + v.len()).sum()
}

fn optional_string<'a>(fbb: &mut FlatBufferBuilder<'a>, s: &str) -> Option<WIPOffset<&'a str>> {
    (!s.is_empty()).then(|| fbb.create_shared_string(s))
}

fn write_properties<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    scratch: &mut Vec<WIPOffset<Property<'a>>>,
    props: &[(String, String)],
) -> Option<PropertyList<'a>> {
    if props.is_empty() {
        return None;
    }
    scratch.clear();
    for (k, v) in props {
        let key = optional_string(fbb, k);
        let value = optional_string(fbb, v);
        scratch.push(Property::create(fbb, &PropertyArgs { key, value }));
    }
    Some(fbb.create_vector(scratch))
}

fn read_properties(props: Option<Vector<'_, ForwardsUOffset<Property<'_>>>>) -> Vec<(String, String)> {
    props
        .map(|v| {
            v.iter()
                .map(|p| {
                    (
                        p.key().unwrap_or_default().to_owned(),
                        p.value().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

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
        let bytes = encode_graph(&nodes, &edges, 7, 1_733_000_000);
        assert!(graph_buffer_has_identifier(&bytes));
        let (n, e, version, last_updated) = decode_graph(&bytes).expect("valid buffer");
        assert_nodes_eq(&n, &sorted_by_crn(nodes));
        assert_eq!(e, edges);
        assert_eq!(version, 7);
        assert_eq!(last_updated, 1_733_000_000);
    }

    #[test]
    fn round_trip_empty_graph() {
        let bytes = encode_graph(&[], &[], 0, 0);
        let (n, e, version, last_updated) = decode_graph(&bytes).expect("valid buffer");
        assert!(n.is_empty());
        assert!(e.is_empty());
        assert_eq!((version, last_updated), (0, 0));
    }

    #[test]
    fn nodes_are_sorted_for_key_lookup() {
        let (nodes, edges) = sample();
        let bytes = encode_graph(&nodes, &edges, 1, 1);
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
            assert!(decode_graph(&bytes).is_err(), "accepted {bytes:?}");
        }
        // All zeros happen to be a valid empty `Graph` table: the file
        // identifier is optional in FlatBuffers, so it is not required here.
        let (n, e, v, t) = decode_graph(&[0; 64]).expect("empty table");
        assert!(n.is_empty() && e.is_empty() && v == 0 && t == 0);
    }

    #[test]
    fn truncated_and_corrupted_buffers_never_panic() {
        let (nodes, edges) = sample();
        let bytes = encode_graph(&nodes, &edges, 3, 4);
        for len in 0..bytes.len() {
            // Truncation either fails verification or, rarely, still yields
            // a valid buffer; it must not panic.
            let _ = decode_graph(&bytes[..len]);
        }
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut corrupt = bytes.clone();
                corrupt[i] ^= flip;
                let _ = decode_graph(&corrupt);
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
        let err = decode_graph(fbb.finished_data()).expect_err("node without type");
        assert!(matches!(err, InvalidFlatbuffer::MissingRequiredField { .. }), "{err}");
    }

    /// Fails when schemas/graph.fbs or the generated code changed without
    /// running schemas/regen.sh.
    #[test]
    fn generated_code_is_fresh() {
        let recorded = include_str!("graph.fbs.sha256");
        let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../schemas/graph.fbs");
        let schema = std::fs::read(schema_path).unwrap_or_else(|e| panic!("reading {schema_path}: {e}"));
        let generated: &[u8] = include_bytes!("graph_generated.rs");
        let files = [
            ("schemas/graph.fbs", schema.as_slice()),
            ("engine/src/fbs/graph_generated.rs", generated),
        ];
        for (name, bytes) in files {
            let want = recorded
                .lines()
                .find_map(|line| {
                    let (sum, file) = line.split_once(char::is_whitespace)?;
                    (file.trim_start().trim_start_matches('*') == name).then_some(sum)
                })
                .unwrap_or_else(|| panic!("graph.fbs.sha256 has no entry for {name}: run schemas/regen.sh"));
            let got = hex::encode(Sha256::digest(bytes));
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
            let bytes = encode_graph(&nodes, &edges, version, last_updated);
            let (n, e, v, t) = decode_graph(&bytes).expect("valid buffer");
            assert_nodes_eq(&n, &sorted_by_crn(nodes));
            prop_assert_eq!(e, edges);
            prop_assert_eq!(v, version);
            prop_assert_eq!(t, last_updated);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_graph(&bytes);
        }
    }
}

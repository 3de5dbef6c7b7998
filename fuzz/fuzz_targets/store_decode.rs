//! The store's public decoders on arbitrary bytes: a node version, an edge
//! version (key and value), a snapshot's node and edge sections, and the
//! cost history and anomalies values. Each refuses what it cannot read
//! without panicking, and a node or edge value it accepts encodes to bytes
//! that decode to the same encoding again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use svc_engine::Interner;
use svc_engine::graph::NodeShard;
use svc_engine::signal::store::{decode_anomalies, decode_totals, encode_anomalies, encode_totals};
use svc_engine::store::codec::{decode_edge_keyed, decode_node, encode_edge_value_into, encode_node_into};
use svc_engine::store::snapshot::{Mapped, decode_edges, decode_nodes};

fuzz_target!(|data: &[u8]| {
    if let Ok(node) = decode_node(data) {
        let mut once = Vec::new();
        encode_node_into(&node, &mut once);
        let again = decode_node(&once).unwrap_or_else(|e| panic!("a re-encoded node does not decode: {e}"));
        let mut twice = Vec::new();
        encode_node_into(&again, &mut twice);
        assert_eq!(once, twice, "a node's encoding changed on its way back");
    }

    // The first byte splits the rest into an edge key and value.
    if let Some((&split, rest)) = data.split_first() {
        let (key, value) = rest.split_at(usize::from(split).min(rest.len()));
        if let Ok(edge) = decode_edge_keyed(key, value) {
            let mut once = Vec::new();
            encode_edge_value_into(&edge, &mut once);
            let again =
                decode_edge_keyed(key, &once).unwrap_or_else(|e| panic!("a re-encoded edge does not decode: {e}"));
            let mut twice = Vec::new();
            encode_edge_value_into(&again, &mut twice);
            assert_eq!(once, twice, "an edge's encoding changed on its way back");
        }
    }

    let nodes: Vec<NodeShard> = decode_nodes(Mapped::copied(data)).into_iter().collect();
    let _ = decode_edges(Mapped::copied(data), &nodes);
    let _ = decode_edges(Mapped::copied(data), &[]);

    let interner = Interner::new();
    if let Ok(totals) = decode_totals(data, &interner) {
        let _ = encode_totals(&totals, &interner);
    }
    if let Ok(anomalies) = decode_anomalies(data) {
        let _ = encode_anomalies(&anomalies);
    }
});

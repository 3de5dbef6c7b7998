//! The host's borrowed view of a `ScanResponse` (`svc_ingest::decode::wire`)
//! on arbitrary bytes: it never panics, and it accepts exactly what prost
//! accepts, reading the same nodes and edges. The strings the view hands
//! on as bytes (CRNs, relations) are checked here, as the decoder checks
//! them.

#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use svc_ingest::decode::wire::{Item, items};
use svc_proto::provider::v1 as pb;

fuzz_target!(|data: &[u8]| {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut ok = true;
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok();
    for item in items(data) {
        match item {
            Ok(Item::Node(n)) => match text(n.crn) {
                Some(crn) => nodes.push((crn, n.properties.to_vec(), n.cost.to_bits())),
                None => ok = false,
            },
            Ok(Item::Edge(e)) => match (text(e.source_crn), text(e.target_crn), text(e.relation)) {
                (Some(s), Some(t), Some(r)) => edges.push((s, t, r)),
                _ => ok = false,
            },
            Err(_) => ok = false,
        }
        if !ok {
            break;
        }
    }
    match pb::ScanResponse::decode(data) {
        Ok(want) => {
            assert!(ok, "prost accepts what the view refuses");
            let want_nodes: Vec<_> = want
                .nodes
                .iter()
                .map(|n| (n.crn.clone(), n.properties.clone(), n.cost.to_bits()))
                .collect();
            let want_edges: Vec<_> = want
                .edges
                .iter()
                .map(|e| (e.source_crn.clone(), e.target_crn.clone(), e.relation.clone()))
                .collect();
            assert_eq!(nodes, want_nodes);
            assert_eq!(edges, want_edges);
        }
        Err(_) => assert!(!ok, "the view accepts what prost refuses"),
    }
});

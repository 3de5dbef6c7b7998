//! A `graph.snap` node section and edge section, from arbitrary bytes, as
//! the engine loads them: what the decoders accept must be safe to use.
//! The first byte is the node shard the node section is of, the next two
//! (little-endian) say where it ends; the rest is the edge section,
//! decoded against the nodes. Accepted sections become shards of a graph
//! (the edges the shard of their sources') whose adjacency is built; every node
//! and edge is then read through the graph's views (CRN, every field,
//! properties, tags, edges both ways), without a panic, and each node row
//! is stored (`graph.redb`'s node version) and read back the same.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use svc_engine::graph::{EdgeShard, NodeKeyRef, NodeShard};
use svc_engine::ids::{EDGE_SHARDS, NODE_SHARDS};
use svc_engine::store::codec::{decode_node, encode_node_into};
use svc_engine::store::snapshot::{Mapped, decode_edges, decode_nodes};
use svc_engine::{Graph, Interner};

fuzz_target!(|data: &[u8]| {
    let Some((&[at, a, b], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let at = usize::from(at) % NODE_SHARDS;
    let (node_bytes, edge_bytes) = rest.split_at(usize::from(u16::from_le_bytes([a, b])).min(rest.len()));
    let Ok(shard) = decode_nodes(Mapped::copied(node_bytes)) else {
        return;
    };
    let mut nodes: Vec<NodeShard> = (0..NODE_SHARDS).map(|_| NodeShard::default()).collect();
    nodes[at] = shard;
    let mut edges: Vec<EdgeShard> = (0..EDGE_SHARDS).map(|_| EdgeShard::default()).collect();
    if let Ok(e) = decode_edges(Mapped::copied(edge_bytes), &nodes) {
        edges[at % EDGE_SHARDS] = e;
    }
    // Some symbols, so that a few of the stored ones resolve.
    let interner = Arc::new(Interner::new());
    for s in [
        "aws",
        "us-east-1",
        "ec2",
        "volume",
        "123456789012",
        "ec2:volume",
        "available",
        "env",
        "prod",
    ] {
        interner.intern(s);
    }
    let mut g = Graph::from_shards(interner.clone(), nodes, edges, 1);
    let now = g.nodes().map(|n| n.valid_from()).max().unwrap_or(1);
    g.rebuild_adjacency(now);
    let mut seen = 0usize;
    for n in g.nodes() {
        seen += n.crn().len();
        seen += format!("{:?}", n.fields()).len();
        seen += n
            .props()
            .map(|(k, v)| interner.resolve(k).len() + format!("{v:?}").len())
            .sum::<usize>();
        seen += n
            .tags()
            .map(|(k, v)| interner.resolve(k).len() + interner.resolve(v).len())
            .sum::<usize>();
        seen += n
            .out_edges()
            .chain(n.in_edges())
            .map(|e| e.props().count())
            .sum::<usize>();
        let [provider, region, service, kind, account] = n.key();
        let key = NodeKeyRef {
            provider,
            region,
            service,
            kind,
            account,
            id: n.physical_id(),
        };
        seen += usize::from(n.is_visible(now)) + usize::from(g.find_key(key).is_some());
        // A row loaded from a snapshot is stored as any other is.
        let mut stored = Vec::new();
        encode_node_into(&n.fields().to_row(), &mut stored);
        let row = decode_node(&stored).unwrap_or_else(|e| panic!("a stored row does not decode: {e}"));
        let mut again = Vec::new();
        encode_node_into(&row, &mut again);
        assert_eq!(again, stored);
    }
    for e in g.edges() {
        seen += g.crn(e.source()).len() + g.crn(e.target()).len() + e.props().count();
        seen += usize::from(g.is_edge_visible(e.id(), now));
    }
    std::hint::black_box(seen);
});

//! Bytes of memory per node at 1M nodes (budget: 400), printed, not timed.
//!
//! The figure is the heap bytes the node shards, edge shards and adjacency
//! index hold after a full ingest of the mock estate (exact, from column
//! capacities), with the breakdown by part. Run: `cargo bench --bench memory`.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;

use svc_engine::{Graph, Interner};
use svc_mock_estate::MockEstate;

fn main() {
    let n: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let interner = Arc::new(Interner::new());
    let (nodes, edges) = MockEstate::new(7, n).generate(&interner, 0, 4096);
    let count: usize = nodes.iter().map(|b| b.len()).sum();
    let edge_count: usize = edges.iter().map(|b| b.len()).sum();
    let mut g = Graph::new(interner.clone());
    g.ingest_nodes(&nodes, 1, 1);
    g.ingest_edges(&edges, 1, 1);
    g.rebuild_adjacency(1);
    g.shrink_to_fit();
    drop(nodes);
    drop(edges);
    let heap = g.heap_bytes();
    println!("nodes {count}, edges {edge_count}, interned strings {}", interner.len());
    println!(
        "graph heap bytes per node (shards + edges + adjacency): {:.1}",
        heap as f64 / count as f64
    );
    let (cols, arenas, edge_bytes, adj) = g.heap_breakdown();
    let per = |b: usize| b as f64 / count as f64;
    println!(
        "per node: node columns {:.1}, node arenas (ids, tags, properties) {:.1}, edges {:.1}, adjacency {:.1}",
        per(cols),
        per(arenas),
        per(edge_bytes),
        per(adj)
    );
    std::hint::black_box(&g);
}

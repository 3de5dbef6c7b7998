//! Bytes of memory per node at 1M nodes (budget: 400), printed, not timed.
//!
//! Two figures: the heap bytes the shards and the adjacency index hold (what
//! the graph owns, exact), and the growth of the process's resident set while
//! the graph is built (what the operating system sees, including allocator
//! overhead). Run: `cargo bench --bench memory`.

use std::sync::Arc;

use svc_engine::{Graph, Interner};
use svc_ingest::mock::MockEstate;

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn main() {
    let n: usize = std::env::var("SVC_BENCH_NODES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let interner = Arc::new(Interner::new());
    let (nodes, edges) = MockEstate::new(7, n).generate(&interner, 0, 4096);
    let count: usize = nodes.iter().map(|b| b.len()).sum();
    let edge_count: usize = edges.iter().map(|b| b.len()).sum();
    let before = rss_bytes();
    let mut g = Graph::new(interner.clone());
    g.ingest_nodes(&nodes, 1, 1);
    g.ingest_edges(&edges, 1, 1);
    g.rebuild_adjacency(1);
    g.shrink_to_fit();
    drop(nodes);
    drop(edges);
    let after = rss_bytes();
    let heap = g.heap_bytes();
    println!("nodes {count}, edges {edge_count}, interned strings {}", interner.len());
    println!("graph heap bytes per node (shards + edges + adjacency): {:.1}", heap as f64 / count as f64);
    println!(
        "resident set growth per node while building (upper bound; batch buffers freed late): {:.1}",
        after.saturating_sub(before) as f64 / count as f64
    );
    std::hint::black_box(&g);
}

//! Blast radius on a 1M-node graph (budget: p99 <= 5 ms).
//!
//! Criterion reports the median over a fixed cycle of roots; the p99 over
//! 10,000 roots is printed before the criterion run.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use svc_engine::blast::blast_radius;
use svc_engine::{Graph, Interner, NodeId};
use svc_mock_estate::MockEstate;

fn build(n: usize) -> (Graph, Vec<NodeId>) {
    let interner = Arc::new(Interner::new());
    let (nodes, edges) = MockEstate::new(7, n).generate(&interner, 0, 4096);
    let mut g = Graph::new(interner);
    g.ingest_nodes(&nodes, 1, 1);
    g.ingest_edges(&edges, 1, 1);
    g.rebuild_adjacency(1);
    let all: Vec<NodeId> = g.nodes().map(|n| n.id()).collect();
    // A deterministic spread of roots over the whole graph.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let roots = (0..10_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            all[(x % all.len() as u64) as usize]
        })
        .collect();
    (g, roots)
}

fn blast(c: &mut Criterion) {
    let (g, roots) = build(1_000_000);
    let mut times: Vec<u128> = roots
        .iter()
        .map(|&r| {
            let t = Instant::now();
            std::hint::black_box(blast_radius(&g, r, 100));
            t.elapsed().as_nanos()
        })
        .collect();
    times.sort_unstable();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)] as f64 / 1000.0;
    println!(
        "blast radius over 10000 roots at 1M nodes: p50 {:.1} us, p99 {:.1} us, max {:.1} us",
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    let mut i = 0;
    c.bench_function("blast_radius/1M", |b| {
        b.iter(|| {
            i = (i + 1) % roots.len();
            blast_radius(&g, roots[i], 100)
        })
    });
}

criterion_group!(benches, blast);
criterion_main!(benches);

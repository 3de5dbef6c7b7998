//! In-process ingest of the mock estate into the shards (budget: 5,000,000 nodes/s).
//!
//! The estate is generated and interned before timing, as the plugin host's
//! decoders do before handing batches over; the timed part is the shard-side
//! upsert (and, for `nodes+edges`, edge resolution and the adjacency rebuild).

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::{Graph, Interner};
use svc_mock_estate::MockEstate;

fn ingest(c: &mut Criterion) {
    for n in [100_000usize, 1_000_000] {
        let interner = Arc::new(Interner::new());
        let (nodes, edges) = MockEstate::new(7, n).generate(&interner, 0, 4096);
        let count: usize = nodes.iter().map(|b| b.len()).sum();
        let mut group = c.benchmark_group("ingest");
        group.sample_size(10);
        group.throughput(Throughput::Elements(count as u64));
        group.bench_function(BenchmarkId::new("nodes", n), |b| {
            b.iter_batched(
                || Graph::new(interner.clone()),
                |mut g| {
                    g.ingest_nodes(&nodes, 1, 1);
                    g
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function(BenchmarkId::new("nodes+edges+adjacency", n), |b| {
            b.iter_batched(
                || Graph::new(interner.clone()),
                |mut g| {
                    g.ingest_nodes(&nodes, 1, 1);
                    g.ingest_edges(&edges, 1, 1);
                    g.rebuild_adjacency(1);
                    g
                },
                BatchSize::PerIteration,
            )
        });
        // A rescan of an unchanged estate: every node is looked up and found unchanged.
        let mut g = Graph::new(interner.clone());
        g.ingest_nodes(&nodes, 1, 1);
        let mut scan = 1;
        group.bench_function(BenchmarkId::new("rescan-unchanged", n), |b| {
            b.iter(|| {
                scan += 1;
                g.ingest_nodes(&nodes, 2, scan)
            })
        });
        // The same for edges: every edge's endpoints resolved, the edge found unchanged.
        g.ingest_edges(&edges, 1, 1);
        let edge_count: usize = edges.iter().map(|b| b.len()).sum();
        group.throughput(Throughput::Elements(edge_count as u64));
        group.bench_function(BenchmarkId::new("rescan-unchanged-edges", n), |b| {
            b.iter(|| {
                scan += 1;
                g.ingest_edges(&edges, 2, scan)
            })
        });
        group.finish();
    }
}

criterion_group!(benches, ingest);
criterion_main!(benches);

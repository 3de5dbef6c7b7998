//! The ghost linker and formal verification over a 1M-node mock estate
//! (about 2M edges): the linker's matching pass from scratch and as a later
//! scan runs it (every node's facts kept from the last run), a
//! steady-state linker run (every match already an edge), and the
//! reachability fixpoint with risk and spot estimates for every node. Then
//! the adjacency rebuild a scan runs twice: from scratch, after ~300
//! inferred edges as the linker adds them, and after a rescan (about 0.5%
//! of nodes gone, 0.5% new, 1.5% changed, with their edges).

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use svc_engine::analysis::{linker, reach};
use svc_engine::graph::InferredEdge;
use svc_engine::{Graph, Interner, NodeId, Relation};
use svc_mock_estate::{MockEstate, SCAN_BATCH};

fn estate(nodes: usize) -> Graph {
    let interner = Arc::new(Interner::new());
    let (n, e) = MockEstate::new(42, nodes).generate(&interner, 0, SCAN_BATCH);
    let mut g = Graph::new(interner);
    g.ingest_nodes(&n, 1, 1);
    g.ingest_edges(&e, 1, 1);
    g.rebuild_adjacency(1);
    g
}

fn bench_nodes() -> usize {
    std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn verify(c: &mut Criterion) {
    let nodes = bench_nodes();
    let mut g = estate(nodes);
    let first = linker::run(&mut g, 2, 2);
    g.rebuild_adjacency(2);
    let a = reach::run(&g, 3, 2, &[]);
    println!(
        "{} nodes, {} edges: linker matched {} (added {}); {} entry points, {} reachable, {} unreachable, {} spot",
        g.node_rows(),
        g.edge_rows(),
        first.matched(),
        first.added,
        a.entry_points,
        a.reachable,
        a.unreachable,
        a.spot_machines
    );
    let mut group = c.benchmark_group("verify");
    group.sample_size(10);
    group.throughput(Throughput::Elements(g.node_rows() as u64));
    group.bench_function(format!("linker_find/{nodes}"), |b| b.iter(|| linker::find(&g, 3).len()));
    // As a later scan finds it: every node's facts kept from the last run.
    let mut cache = linker::Cache::default();
    linker::find_with(&mut cache, &g, 3);
    assert_eq!(linker::find_with(&mut cache, &g, 3), linker::find(&g, 3));
    assert_eq!(cache.read, 0);
    group.bench_function(format!("linker_find_unchanged/{nodes}"), |b| {
        b.iter(|| linker::find_with(&mut cache, &g, 3).len())
    });
    let mut scan = 3;
    group.bench_function(format!("linker_run/{nodes}"), |b| {
        b.iter(|| {
            scan += 1;
            linker::run_with(&mut cache, &mut g, 3, scan).added
        })
    });
    group.bench_function(format!("reachability/{nodes}"), |b| {
        b.iter(|| reach::run(&g, 3, 2, &[]).reachable)
    });
    group.finish();
}

fn adjacency(c: &mut Criterion) {
    let nodes = bench_nodes();
    let interner = Arc::new(Interner::new());
    let mock = MockEstate::new(42, nodes);
    let (n, e) = mock.generate(&interner, 0, SCAN_BATCH);
    let mut g = Graph::new(interner.clone());
    g.ingest_nodes(&n, 1, 1);
    g.ingest_edges(&e, 1, 1);
    drop((n, e));
    g.rebuild_adjacency(1);
    let rescans = [
        mock.generate(&interner, 1, SCAN_BATCH),
        mock.generate(&interner, 2, SCAN_BATCH),
    ];
    let providers: Vec<_> = g.stats(1).providers.iter().map(|p| p.0).collect();
    let ids: Vec<NodeId> = g.nodes().map(|n| n.id()).collect();
    let mut group = c.benchmark_group("adjacency");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Elements(g.edge_rows() as u64));
    group.bench_function(format!("full/{nodes}"), |b| {
        b.iter(|| g.rebuild_adjacency_from_scratch(1))
    });
    // As the ghost linker: 300 new inferred edges between existing nodes.
    let (mut round, mut now) = (0usize, 1u64);
    let before = g.adjacency().builds();
    group.bench_function(format!("inferred_300/{nodes}"), |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                let edges: Vec<InferredEdge> = (0..300)
                    .map(|k| {
                        let i = round * 300 + k;
                        InferredEdge {
                            src: ids[i * 7919 % ids.len()],
                            dst: ids[(i * 104_729 + 1) % ids.len()],
                            rel: Relation::FlowsTo,
                            props: Vec::new(),
                        }
                    })
                    .collect();
                g.upsert_inferred_edges(&edges, now, 2);
                let t = Instant::now();
                g.rebuild_adjacency(now);
                spent += t.elapsed();
            }
            spent
        })
    });
    // A rescan: the next epoch's nodes and edges upserted, the unseen
    // retired (untimed), then the rebuild.
    group.measurement_time(Duration::from_millis(100));
    group.warm_up_time(Duration::from_millis(1));
    group.bench_function(format!("rescan/{nodes}"), |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                now += 1;
                let (n, e) = &rescans[round % 2];
                let scan = now as u32;
                g.ingest_nodes(n, now, scan);
                g.ingest_edges(e, now, scan);
                g.retire_unseen(&providers, now, scan);
                let t = Instant::now();
                g.rebuild_adjacency(now);
                spent += t.elapsed();
            }
            spent
        })
    });
    group.finish();
    let after = g.adjacency().builds();
    println!(
        "adjacency: {} patched and {} full builds after the full-build bench",
        after.patched - before.patched,
        after.full - before.full
    );
}

criterion_group!(benches, verify, adjacency);
criterion_main!(benches);

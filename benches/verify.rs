//! The ghost linker and formal verification over a 1M-node mock estate
//! (about 2M edges): the linker's matching pass from scratch and as a later
//! scan runs it (every node's facts kept from the last run), a
//! steady-state linker run (every match already an edge), and the reachability fixpoint with risk
//! and spot estimates for every node.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::analysis::{linker, reach};
use svc_engine::{Graph, Interner};
use svc_ingest::mock::{MockEstate, SCAN_BATCH};

fn estate(nodes: usize) -> Graph {
    let interner = Arc::new(Interner::new());
    let (n, e) = MockEstate::new(42, nodes).generate(&interner, 0, SCAN_BATCH);
    let mut g = Graph::new(interner);
    g.ingest_nodes(&n, 1, 1);
    g.ingest_edges(&e, 1, 1);
    g.rebuild_adjacency(1);
    g
}

fn verify(c: &mut Criterion) {
    let nodes: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
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

criterion_group!(benches, verify);
criterion_main!(benches);

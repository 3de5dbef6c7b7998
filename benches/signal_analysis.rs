//! `engine.signal_analysis` over a 1M-node mock estate: the rayon pass that
//! adds up every type (count, cost, waste) and compares every node's cost
//! with the previous scan's, then the robust z-scores of the changed nodes
//! within their type and of each type's total against its history. The
//! estate is scanned at epoch 0, then at epoch 1 (about 1.5% of resources
//! changed, 0.5% new, 0.5% gone), and the second scan is analysed.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::heuristics::{FindingSet, builtin, join};
use svc_engine::ids::Sym;
use svc_engine::signal::Signal;
use svc_engine::store::GraphStore;
use svc_engine::{Graph, Interner};
use svc_mock_estate::{MockEstate, SCAN_BATCH, epoch_time};

/// Scans `epoch` into `g` at time `now` (scan `epoch + 1`) and judges it.
fn scan(g: &mut Graph, estate: &MockEstate, epoch: u64, now: u64) -> FindingSet {
    let (n, e) = estate.generate(g.interner(), epoch, SCAN_BATCH);
    let scan = (epoch + 1) as u32;
    g.ingest_nodes(&n, now, scan);
    g.ingest_edges(&e, now, scan);
    let providers: Vec<Sym> = g.stats(now).providers.iter().map(|(p, _)| *p).collect();
    g.retire_unseen(&providers, now, scan);
    g.rebuild_adjacency(now);
    let out = builtin::run(g, now, epoch_time(epoch), &builtin::Selection::default());
    let set = FindingSet::new(epoch + 1, out.findings, Vec::new());
    join::apply(g, &set, now);
    set
}

fn signal_analysis(c: &mut Criterion) {
    let nodes: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let estate = MockEstate::new(42, nodes);
    let mut g = Graph::new(Arc::new(Interner::new()));
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = GraphStore::open(&dir.path().join("graph.redb")).expect("graph store");
    let signal = Signal::empty();

    let first = scan(&mut g, &estate, 0, 10);
    let analysis = signal.analyze(&g, &first, 10, 1);
    signal.install(&store, g.interner(), analysis);
    let second = scan(&mut g, &estate, 1, 20);
    let a = signal.analyze(&g, &second, 20, 2).anomalies;
    println!(
        "{} node rows: {} compared, {} changed, {} node anomalies, {} type anomalies",
        g.node_rows(),
        a.nodes_compared,
        a.nodes_changed,
        a.nodes_flagged,
        a.types.len()
    );

    let mut group = c.benchmark_group("signal_analysis");
    group.sample_size(10);
    group.throughput(Throughput::Elements(g.node_rows() as u64));
    group.bench_function(format!("analyze/{nodes}"), |b| {
        b.iter(|| signal.analyze(&g, &second, 20, 2).anomalies.nodes_flagged)
    });
    group.finish();
}

criterion_group!(benches, signal_analysis);
criterion_main!(benches);

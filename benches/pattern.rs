//! The `engine.pattern` pass over a 1M-node mock estate (~1.8M edges):
//! two Weisfeiler-Lehman rounds of structural signatures, grouping, outliers
//! and grouped findings, over a graph whose verdicts the built-in rules set.
//! The signatures alone are measured apart.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::analysis::pattern;
use svc_engine::heuristics::{FindingSet, builtin, join};
use svc_engine::{Graph, Interner};
use svc_mock_estate::{MockEstate, SCAN_BATCH, epoch_time};

fn estate(nodes: usize) -> Graph {
    let interner = Arc::new(Interner::new());
    let (n, e) = MockEstate::new(42, nodes).generate(&interner, 0, SCAN_BATCH);
    let mut g = Graph::new(interner);
    g.ingest_nodes(&n, 1, 1);
    g.ingest_edges(&e, 1, 1);
    g.rebuild_adjacency(1);
    g
}

fn pattern_pass(c: &mut Criterion) {
    let nodes: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut g = estate(nodes);
    let out = builtin::run(&g, 2, epoch_time(0), &builtin::Selection::default());
    let set = FindingSet::new(1, out.findings, Vec::new());
    join::apply(&mut g, &set, 2);
    let savings = |id| set.deciding(id).map(|f| f.projected_savings_usd_mo);
    let report = pattern::run(&g, 3, &savings);
    println!(
        "{} nodes, {} edges: {} signed, {} distinct signatures, {} groups ({} nodes), {} outliers, {} grouped findings",
        g.node_rows(),
        g.edge_rows(),
        report.signatures,
        report.distinct_signatures,
        report.groups,
        report.grouped_nodes,
        report.outliers_total,
        report.grouped_total
    );
    for f in report.grouped.iter().take(3) {
        println!("  {}", f.summary);
    }
    for o in report.outliers.iter().take(3) {
        println!("  {}", o.reason);
    }
    let mut group = c.benchmark_group("pattern");
    group.sample_size(10);
    group.throughput(Throughput::Elements(g.node_rows() as u64));
    group.bench_function(format!("signatures/{nodes}"), |b| {
        b.iter(|| pattern::signatures(&g, 3, pattern::ROUNDS).by_dense().len())
    });
    group.bench_function(format!("pass/{nodes}"), |b| {
        b.iter(|| pattern::run(&g, 3, &savings).groups)
    });
    group.finish();
}

criterion_group!(benches, pattern_pass);
criterion_main!(benches);

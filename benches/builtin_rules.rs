//! Every built-in waste rule over a 1M-node mock estate (waste issue budget:
//! 20 ms on 2 cores): the parallel pass that selects each node's rules by
//! type, honours `svc:ignore`, evaluates conditions on properties and
//! edges, and writes findings with their reasons and savings
//! (`all_rules`). Measured apart: deciding which rules fire with what
//! savings (`decide`), rendering the reasons of those hits (`render`), and
//! the join that turns findings into verdicts in the graph.
//!
//! `later_scan` is the pass as a later scan runs it: the answers of the
//! scan before kept ([`builtin::Cache`]), the mock estate's next epoch
//! ingested (about 0.5% of nodes gone, 0.5% new, 1.5% changed, with their
//! edges, an hour later), and only the answers that may differ worked out
//! again.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::heuristics::{FindingSet, builtin, join};
use svc_engine::{Graph, Interner};
use svc_mock_estate::{MockEstate, PROVIDERS, SCAN_BATCH, epoch_time};

fn estate(nodes: usize) -> Graph {
    let interner = Arc::new(Interner::new());
    let (n, e) = MockEstate::new(42, nodes).generate(&interner, 0, SCAN_BATCH);
    let mut g = Graph::new(interner);
    g.ingest_nodes(&n, 1, 1);
    g.ingest_edges(&e, 1, 1);
    g.rebuild_adjacency(1);
    g
}

/// The kept answers of a pass over epoch 0, then epoch 1 ingested into the
/// same graph (scan time 2 µs) with its edge changes.
fn later_scan(nodes: usize) -> (Graph, builtin::Cache, svc_engine::graph::RowChanges) {
    let mut g = estate(nodes);
    let mut cache = builtin::Cache::default();
    let selection = builtin::Selection::default();
    let changes = g.take_row_changes();
    cache.run(&g, &changes, 1, epoch_time(0), &selection);
    let (n, e) = MockEstate::new(42, nodes).generate(g.interner(), 1, SCAN_BATCH);
    g.ingest_nodes(&n, 2, 2);
    g.ingest_edges(&e, 2, 2);
    let providers: Vec<_> = PROVIDERS.iter().map(|p| g.interner().intern(p)).collect();
    g.retire_unseen(&providers, 2, 2);
    g.rebuild_adjacency(2);
    let changes = g.take_row_changes();
    (g, cache, changes)
}

fn builtin_rules(c: &mut Criterion) {
    let nodes: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let mut g = estate(nodes);
    let as_of = epoch_time(0);
    let selection = builtin::Selection::default();
    let out = builtin::run(&g, 2, as_of, &selection);
    println!(
        "{} nodes: {} evaluated, {} checks, {} findings ({} waste), {} ignored",
        g.node_rows(),
        out.evaluated,
        out.checks,
        out.findings.len(),
        out.findings.iter().filter(|f| f.is_waste).count(),
        out.ignored.len()
    );
    let mut group = c.benchmark_group("builtin_rules");
    group.sample_size(10);
    group.throughput(Throughput::Elements(g.node_rows() as u64));
    group.bench_function(format!("all_rules/{nodes}"), |b| {
        b.iter(|| builtin::run(&g, 2, as_of, &selection).findings.len())
    });
    group.bench_function(format!("decide/{nodes}"), |b| {
        b.iter(|| builtin::decide(&g, 2, as_of, &selection).hits.len())
    });
    let hits = builtin::decide(&g, 2, as_of, &selection).hits;
    group.bench_function(format!("render/{nodes}"), |b| {
        b.iter(|| builtin::render(&g, 2, as_of, &hits).len())
    });
    let (later, kept, changes) = later_scan(nodes);
    let pass = kept.clone().run(&later, &changes, 2, epoch_time(1), &selection);
    println!(
        "later scan: {} evaluated, {} checks, {} kept, {} touched, {} findings",
        pass.evaluated,
        pass.checks,
        pass.kept,
        pass.touched.len(),
        pass.findings
    );
    group.bench_function(format!("later_scan/{nodes}"), |b| {
        b.iter_batched(
            || kept.clone(),
            |mut cache| {
                let pass = cache.run(&later, &changes, 2, epoch_time(1), &selection);
                (pass.evaluated, cache)
            },
            BatchSize::LargeInput,
        )
    });
    drop((later, kept));
    let set = FindingSet::new(1, out.findings, Vec::new());
    let mut now = 3;
    group.bench_function(format!("join/{nodes}"), |b| {
        b.iter(|| {
            now += 1;
            join::apply(&mut g, &set, now)
        })
    });
    group.finish();
}

criterion_group!(benches, builtin_rules);
criterion_main!(benches);

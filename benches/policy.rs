//! 100 realistic CEL policy rules over a 1M-node mock estate (budget: 1 s
//! on 2 cores): the fast path (column predicates, kind guards, the
//! interpreter only where a rule needs it) against the interpreter alone.
//! The interpreter-only pass is measured on a 10k-node sample of the same
//! estate and extrapolated (about 30 s at 1M would make the bench take
//! hours). Also one rule as a dry-run over 1M nodes, matching CRNs included.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::policy::compile::{Compiled, compile};
use svc_engine::policy::eval::{EvalOptions, EvalRule, evaluate};
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

#[allow(dead_code, reason = "the bench uses the rules, not svc bench's dry-run rule")]
#[path = "../src/cli/bench/rules.rs"]
mod bench_rules;
use bench_rules::rules;

fn options(interpreter_only: bool) -> EvalOptions {
    EvalOptions {
        now_us: 2,
        as_of_s: epoch_time(0),
        interpreter_only,
        hit_limit: usize::MAX,
        ..EvalOptions::default()
    }
}

fn policy(c: &mut Criterion) {
    let nodes: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let sample_nodes = 10_000;
    let compiled: Vec<Compiled> = rules().iter().map(|r| compile(r).expect(r)).collect();
    let eval_rules: Vec<EvalRule<'_>> = compiled
        .iter()
        .map(|c| EvalRule {
            compiled: c,
            collect_hits: true,
        })
        .collect();
    let g = estate(nodes);
    let sample = estate(sample_nodes);
    let fast_rules = compiled.iter().filter(|c| c.is_fast()).count();
    let out = evaluate(&g, &eval_rules, &options(false));
    let matched = out.rules.iter().filter(|t| t.matches > 0).count();
    println!(
        "{} nodes, {} rules ({fast_rules} fast): {} matches, {} errors, {} rules match something, {} interpreted, {} ms",
        out.nodes,
        compiled.len(),
        out.rules.iter().map(|t| t.matches).sum::<u64>(),
        out.rules.iter().map(|t| t.errors).sum::<u64>(),
        matched,
        out.rules.iter().map(|t| t.interpreted).sum::<u64>(),
        out.duration_us / 1000
    );
    let slow = evaluate(&sample, &eval_rules, &options(true));
    let fast_sample = evaluate(&sample, &eval_rules, &options(false));
    for (f, s) in fast_sample.rules.iter().zip(&slow.rules) {
        assert_eq!((f.matches, f.errors), (s.matches, s.errors), "both paths agree");
    }
    println!(
        "interpreter only: {} ms over {} nodes, {:.1} s extrapolated to {} nodes",
        slow.duration_us / 1000,
        slow.nodes,
        slow.duration_us as f64 / 1e6 * nodes as f64 / slow.nodes as f64,
        nodes
    );

    let mut group = c.benchmark_group("policy");
    group.sample_size(10);
    group.throughput(Throughput::Elements(out.nodes));
    group.bench_function(format!("100_rules_fast/{nodes}"), |b| {
        b.iter(|| evaluate(&g, &eval_rules, &options(false)).rules.len())
    });
    group.throughput(Throughput::Elements(slow.nodes));
    group.bench_function(format!("100_rules_interpreter_only/{sample_nodes}"), |b| {
        b.iter(|| evaluate(&sample, &eval_rules, &options(true)).rules.len())
    });
    // Dry-run: one rule, the first 1000 matching CRNs written out.
    let one = compile("kind == \"volume\" && cost > 20.0 && !has(tags.owner)").expect("rule");
    let dry = [EvalRule {
        compiled: &one,
        collect_hits: true,
    }];
    group.throughput(Throughput::Elements(out.nodes));
    group.bench_function(format!("dry_run_one_rule/{nodes}"), |b| {
        b.iter(|| {
            let e = evaluate(
                &g,
                &dry,
                &EvalOptions {
                    hit_limit: 1000,
                    ..options(false)
                },
            );
            let reader = g.interner().reader();
            drop(reader);
            e.rules[0].hits.iter().map(|id| g.crn(*id).len()).sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, policy);
criterion_main!(benches);

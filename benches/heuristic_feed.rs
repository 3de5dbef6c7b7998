//! The heuristic plugin pass of `engine.heuristics` over a 1M-node mock
//! estate: the engine selects nodes, renders the declared properties as
//! strings and streams batches; findings come back and are checked.
//!
//! - `in_process_all_types`: an in-process analyzer that asks for every type
//!   and four properties and flags nothing: the engine side alone.
//! - `unattached_volumes_plugin`: the example plugin
//!   `svc-plugin-unattached-volumes` as a real process over gRPC (volumes and
//!   disks only). Needs `cargo build --release -p svc-plugin-unattached-volumes`.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use svc_engine::heuristics::analyzer::run_analyzers;
use svc_engine::heuristics::{AnalyzeBatch, Analyzer, AnalyzerSpec, PluginFinding};
use svc_engine::scan::SourceError;
use svc_engine::{Graph, Interner};
use svc_ingest::host::{HeuristicPlugin, SourceOptions};
use svc_mock_estate::MockEstate;

const NODES: usize = 1_000_000;

fn build(n: usize) -> Graph {
    let interner = Arc::new(Interner::new());
    let (nodes, edges) = MockEstate::new(7, n).generate(&interner, 0, 4096);
    let mut g = Graph::new(interner);
    g.ingest_nodes(&nodes, 1, 1);
    g.ingest_edges(&edges, 1, 1);
    g
}

/// Takes every batch and answers nothing.
struct Drain;

impl Analyzer for Drain {
    fn name(&self) -> &str {
        "drain"
    }
    fn spec(&mut self) -> Result<AnalyzerSpec, SourceError> {
        Ok(AnalyzerSpec {
            name: "drain".into(),
            required_properties: vec![
                "size_gib".into(),
                "attachment_state".into(),
                "cpu_avg_7d".into(),
                "users".into(),
            ],
            preferred_batch_size: 1000,
            ..AnalyzerSpec::default()
        })
    }
    fn analyze(
        &mut self,
        batches: Receiver<AnalyzeBatch>,
        _timeout: Option<Duration>,
        _found: &mut dyn FnMut(PluginFinding) -> std::ops::ControlFlow<()>,
    ) -> Result<(), SourceError> {
        for b in batches {
            if b.is_last {
                break;
            }
        }
        Ok(())
    }
}

fn plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    let path = exe
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("svc-plugin-unattached-volumes"))
        .expect("target dir");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --release -p svc-plugin-unattached-volumes`",
        path.display()
    );
    path
}

fn feed(c: &mut Criterion) {
    let graph = build(NODES);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut group = c.benchmark_group("heuristic_feed_1M");
    group.sample_size(10);
    let mut drain: Vec<Box<dyn Analyzer>> = vec![Box::new(Drain)];
    group.bench_function("in_process_all_types", |b| {
        b.iter(|| run_analyzers(&graph, &mut drain, 1, None))
    });
    let mut real: Vec<Box<dyn Analyzer>> = vec![Box::new(HeuristicPlugin::new(
        plugin(),
        SourceOptions::default(),
        rt.handle().clone(),
    ))];
    let (findings, outcomes) = run_analyzers(&graph, &mut real, 1, None);
    println!(
        "unattached-volumes: {} nodes sent in {} batches, {} findings, ok {}",
        outcomes[0].nodes_sent,
        outcomes[0].batches_sent,
        findings.len(),
        outcomes[0].ok
    );
    group.bench_function("unattached_volumes_plugin", |b| {
        b.iter(|| run_analyzers(&graph, &mut real, 1, None))
    });
    group.finish();
    for a in &mut real {
        a.stop();
    }
}

criterion_group!(benches, feed);
criterion_main!(benches);

//! Nodes per second from `svc-plugin-mock` processes into the shards over
//! real gRPC (plugin issue budget: 1,000,000 nodes/s on 2 cores), at 1M nodes
//! in total: one plugin, and four plugins streaming at once (each on its own
//! host thread, as the ingest pool will run them). Each round launches the
//! plugins, scans (the plugin builds its estate, streams ~200 bytes of JSON
//! properties per node, the host decodes and interns), then ingests nodes and
//! edges into a fresh graph. Needs `cargo build --release -p svc-plugin-mock`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::graph::{EdgeBatch, NodeBatch};
use svc_engine::scan::{CollectSink, ScanContext, Source};
use svc_engine::{Graph, Interner};
use svc_ingest::host::{PluginSource, SourceOptions};

fn plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    // target/release/deps/<bench> -> target/release/svc-plugin-mock
    let path = exe
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("svc-plugin-mock"))
        .expect("target dir");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --release -p svc-plugin-mock`",
        path.display()
    );
    path
}

/// Scans `plugins` mock plugins of `total / plugins` nodes each, concurrently; returns nodes ingested.
fn round(rt: &tokio::runtime::Runtime, plugins: usize, total: usize) -> (usize, f64, f64) {
    let interner = Arc::new(Interner::new());
    let t = Instant::now();
    let sinks: Vec<CollectSink> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plugins)
            .map(|k| {
                let interner = interner.clone();
                let handle = rt.handle().clone();
                s.spawn(move || {
                    let mut src = PluginSource::new(plugin(), SourceOptions::default(), handle.clone());
                    let config: BTreeMap<String, String> = [
                        ("seed".to_owned(), (100 + k).to_string()),
                        ("scale".to_owned(), (total / plugins).to_string()),
                        ("batch_size".to_owned(), "2000".to_owned()),
                    ]
                    .into();
                    let ctx = ScanContext {
                        interner: &interner,
                        scan_seq: 1,
                        now_us: 1,
                        config: &config,
                        timeout: None,
                    };
                    let mut sink = CollectSink::default();
                    src.scan(&ctx, &mut sink).expect("plugin scan");
                    handle.block_on(src.shutdown());
                    sink
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("scan thread")).collect()
    });
    let streamed = t.elapsed().as_secs_f64();
    let (nodes, edges): (Vec<NodeBatch>, Vec<EdgeBatch>) =
        sinks.into_iter().fold((Vec::new(), Vec::new()), |(mut n, mut e), s| {
            n.extend(s.nodes);
            e.extend(s.edges);
            (n, e)
        });
    let mut g = Graph::new(interner);
    let count = g.ingest_nodes(&nodes, 1, 1).total();
    g.ingest_edges(&edges, 1, 1);
    (count, streamed, t.elapsed().as_secs_f64())
}

fn plugin_ingest(c: &mut Criterion) {
    let total: usize = std::env::var("SVC_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("plugin_ingest");
    group.sample_size(10);
    for plugins in [1usize, 4] {
        let (n, streamed, all) = round(&rt, plugins, total);
        println!(
            "{plugins} plugin(s), {n} nodes: streamed and decoded in {streamed:.2} s, into the shards in {all:.2} s: {:.0} nodes/s",
            n as f64 / all
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("{plugins}_plugins/{total}"), |b| {
            b.iter(|| round(&rt, plugins, total))
        });
    }
    group.finish();
}

criterion_group!(benches, plugin_ingest);
criterion_main!(benches);

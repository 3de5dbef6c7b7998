//! Nodes per second from `svc-plugin-mock` processes into the shards over
//! real gRPC (plugin issue budget: 1,000,000 nodes/s on 2 cores), at 1M nodes
//! in total: one plugin, and four plugins streaming at once (each on its own
//! host thread, as the ingest pool will run them). Each round launches the
//! plugins, scans (the plugin generates the mock estate as it streams: 316
//! bytes of JSON properties and 1.79 edges a node on average, ~770 bytes on
//! the wire, where the budget names ~200 bytes of properties; the host
//! decodes, interns and stages), then applies the staged nodes and edges to
//! a fresh graph, as a scan does. Before criterion's runs, one round of
//! each prints its nodes per second and the CPU it took, in all and split
//! between the bench (the daemon's side) and its plugins. Needs
//! `cargo build --release -p svc-plugin-mock`.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::graph::NodeStage;
use svc_engine::scan::stage::{EdgePool, SourceStage, StageSink};
use svc_engine::scan::{ScanContext, Source};
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

/// CPU seconds (user and system) spent so far by this process, and by its
/// children that have exited and been waited for (the plugins, once shut
/// down): `utime` + `stime` and `cutime` + `cstime` of `/proc/self/stat`,
/// in the kernel's user-visible ticks of 1/100 s. `None` off Linux.
fn cpu_seconds() -> Option<Cpu> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command (in parentheses, and free to hold spaces) come the
    // fields from the third on; `utime` is the fourteenth.
    let (_, rest) = stat.rsplit_once(')')?;
    let ticks: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|t| t.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let [utime, stime, cutime, cstime] = ticks[..] else {
        return None;
    };
    Some(Cpu {
        host: (utime + stime) as f64 / 100.0,
        plugins: (cutime + cstime) as f64 / 100.0,
    })
}

/// CPU seconds of the bench (the daemon's side) and of its plugins.
#[derive(Clone, Copy)]
struct Cpu {
    host: f64,
    plugins: f64,
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, before: Cpu) -> Cpu {
        Cpu {
            host: self.host - before.host,
            plugins: self.plugins - before.plugins,
        }
    }
}

/// What one round measured.
struct Round {
    nodes: usize,
    /// Seconds to the end of the streams.
    streamed: f64,
    /// Seconds to the end of the apply.
    all: f64,
    /// CPU seconds of the bench and of its plugins over the round, if known.
    cpu: Option<Cpu>,
}

/// Scans `plugins` mock plugins of `total / plugins` nodes each, concurrently,
/// through the engine's staging (as the `engine.plugin_scan` phase does: a
/// sink per source, one node stage and one boundary-resolution pool for
/// all), then applies the staged rows to a fresh graph.
fn round(rt: &tokio::runtime::Runtime, plugins: usize, total: usize) -> Round {
    let cpu_before = cpu_seconds();
    let interner = Arc::new(Interner::new());
    let pool = EdgePool::new(plugins);
    let staged_nodes = NodeStage::new();
    let resolvers = std::thread::available_parallelism().map_or(1, usize::from);
    let t = Instant::now();
    let stages: Vec<SourceStage> = std::thread::scope(|s| {
        let (pool, staged_nodes) = (&pool, &staged_nodes);
        let workers: Vec<_> = (0..resolvers).map(|_| s.spawn(move || pool.work())).collect();
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
                        concurrent: plugins,
                        graph: None,
                    };
                    let mut sink = StageSink::new(k, staged_nodes, pool);
                    src.scan(&ctx, &mut sink).expect("plugin scan");
                    handle.block_on(src.shutdown());
                    sink.stage
                })
            })
            .collect();
        let stages = handles.into_iter().map(|h| h.join().expect("scan thread")).collect();
        pool.close();
        for w in workers {
            w.join().expect("resolver");
        }
        stages
    });
    let streamed = t.elapsed().as_secs_f64();
    let (mut edges, mut edge_parts) = (Vec::new(), Vec::new());
    for staged in pool.into_staged() {
        for (b, s) in staged {
            edges.push(b);
            edge_parts.push(s);
        }
    }
    let mut g = Graph::new(interner);
    let count = g.ingest_node_stage(staged_nodes, &vec![true; plugins], 1, 1).total();
    assert_eq!(count as u64, stages.iter().map(|s| s.node_count).sum::<u64>());
    g.ingest_staged_edges(&edges, &edge_parts, 1, 1);
    let all = t.elapsed().as_secs_f64();
    Round {
        nodes: count,
        streamed,
        all,
        cpu: cpu_seconds().zip(cpu_before).map(|(after, before)| after - before),
    }
}

fn plugin_ingest(c: &mut Criterion) {
    // As the daemon does at start.
    svc_engine::malloc::tune();
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
        let r = round(&rt, plugins, total);
        let n = r.nodes;
        let per_node = |s: f64| s * 1e6 / n.max(1) as f64;
        let cpu = r.cpu.map_or(String::new(), |c| {
            format!(
                "; CPU of the bench and its plugins {:.2} s, {:.2} µs a node (the bench {:.2} µs, the plugins {:.2} µs)",
                c.host + c.plugins,
                per_node(c.host + c.plugins),
                per_node(c.host),
                per_node(c.plugins)
            )
        });
        println!(
            "{plugins} plugin(s), {n} nodes: streamed and decoded in {:.2} s, into the shards in {:.2} s: {:.0} nodes/s{cpu}",
            r.streamed,
            r.all,
            n as f64 / r.all
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

//! The plugin side of `plugin_ingest` on its own: `svc-plugin-mock`'s
//! `estate::stream` of the 1M-node mock estate, generated on the plugin's
//! own pool (one thread on two cores) into `ScanResponse`s of 2,000 rows,
//! with nothing sent: what the plugin spends a node before its socket
//! writes. Before criterion's runs, one round prints its nanoseconds a
//! node and the message bytes a node.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::collections::HashMap;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_plugin_mock::estate::{ScanConfig, stream};

/// Streams the estate of `nodes` as the plugin ingest bench asks for it;
/// returns the nodes and message bytes.
fn generate(nodes: usize) -> (usize, usize) {
    let config = ScanConfig {
        seed: 100,
        scale: nodes,
        scan_seq: 1,
        batch_size: 2000,
    };
    let (mut rows, mut bytes) = (0, 0);
    let streamed = stream(&config, &HashMap::new(), None, |m| {
        // Let go of, as a sent message is.
        (rows, bytes) = (rows + m.nodes, bytes + m.response.as_bytes().len());
        Ok::<(), ()>(())
    });
    assert!(streamed.is_ok());
    (rows, bytes)
}

fn mock_wire(c: &mut Criterion) {
    // As the plugin does at start.
    svc_engine::malloc::tune();
    let nodes = 1_000_000;
    let t = Instant::now();
    let (rows, bytes) = generate(nodes);
    println!(
        "{rows} nodes: {:.0} ns a node, {} message bytes a node",
        t.elapsed().as_nanos() as f64 / rows.max(1) as f64,
        bytes / rows.max(1)
    );
    let mut group = c.benchmark_group("mock_wire");
    group.sample_size(10);
    group.throughput(Throughput::Elements(rows as u64));
    group.bench_function(format!("stream/{nodes}"), |b| b.iter(|| generate(nodes)));
    group.finish();
}

criterion_group!(benches, mock_wire);
criterion_main!(benches);

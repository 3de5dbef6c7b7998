//! The plugin side of `plugin_ingest` on its own: the mock estate of 1M
//! nodes generated in its wire form and written into `ScanResponse`s of
//! 2,000 rows by the plugin SDK's writer, on one generating thread (as
//! `svc-plugin-mock` runs on a two-core machine), with nothing sent: what
//! `svc-plugin-mock` spends a node before its socket writes. Before
//! criterion's runs, one round prints its nanoseconds a node and the
//! message bytes a node.

use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_ingest::mock::{WireOut, generate_wire};
use svc_plugin_sdk::{EncodedScanResponse, ScanResponseWriter};

/// Rows a message, as the plugin ingest bench asks of the plugin.
const BATCH: usize = 2000;
/// Bytes reserved a node and an edge of a message, as the mock plugin
/// reserves them: written without growing the buffer.
const NODE_BYTES: usize = 512;
const EDGE_BYTES: usize = 256;

/// One chunk of the estate as messages, as the mock plugin writes it.
struct Chunk {
    nodes: ScanResponseWriter,
    edges: ScanResponseWriter,
    done: Vec<EncodedScanResponse>,
    bytes: usize,
    rows: usize,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            nodes: ScanResponseWriter::default(),
            edges: ScanResponseWriter::default(),
            done: Vec::new(),
            bytes: 0,
            rows: 0,
        }
    }

    fn cut(w: &mut ScanResponseWriter, done: &mut Vec<EncodedScanResponse>, bytes: &mut usize) {
        *bytes += w.len();
        done.push(w.finish());
    }

    /// Its messages, their bytes and its nodes.
    fn finish(mut self) -> (Vec<EncodedScanResponse>, usize, usize) {
        for w in [&mut self.nodes, &mut self.edges] {
            if !w.is_empty() {
                Chunk::cut(w, &mut self.done, &mut self.bytes);
            }
        }
        (self.done, self.bytes, self.rows)
    }
}

impl WireOut for Chunk {
    fn effect(&self, _crn: &str) -> Option<&str> {
        None
    }

    fn node(&mut self, crn: &str, properties: &[u8], cost: f64) {
        if self.nodes.is_empty() {
            self.nodes.reserve(BATCH * NODE_BYTES);
        }
        self.nodes.node(crn, properties, cost);
        self.rows += 1;
        if self.nodes.nodes() >= BATCH {
            Chunk::cut(&mut self.nodes, &mut self.done, &mut self.bytes);
        }
    }

    fn edge(&mut self, source: &str, target: &str, relation: &str) {
        if self.edges.is_empty() {
            self.edges.reserve(BATCH * EDGE_BYTES);
        }
        self.edges.edge(source, target, relation);
        if self.edges.edges() >= BATCH {
            Chunk::cut(&mut self.edges, &mut self.done, &mut self.bytes);
        }
    }
}

/// Generates the estate of `nodes`; returns the nodes and message bytes.
fn generate(pool: &rayon::ThreadPool, nodes: usize) -> (usize, usize) {
    let (mut rows, mut bytes) = (0, 0);
    pool.install(|| {
        let _ = generate_wire((100, nodes, 0), BATCH, Chunk::new, |c| {
            let (messages, b, n) = c.finish();
            // Sent and let go of, as the plugin's messages are.
            drop(messages);
            (rows, bytes) = (rows + n, bytes + b);
            Ok::<(), ()>(())
        });
    });
    (rows, bytes)
}

fn mock_wire(c: &mut Criterion) {
    svc_engine::malloc::tune();
    let nodes = 1_000_000;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a generating thread");
    let t = Instant::now();
    let (rows, bytes) = generate(&pool, nodes);
    println!(
        "{rows} nodes: {:.0} ns a node on one thread, {} message bytes a node",
        t.elapsed().as_nanos() as f64 / rows.max(1) as f64,
        bytes / rows.max(1)
    );
    let mut group = c.benchmark_group("mock_wire");
    group.sample_size(10);
    group.throughput(Throughput::Elements(rows as u64));
    group.bench_function(format!("one_thread/{nodes}"), |b| b.iter(|| generate(&pool, nodes)));
    group.finish();
}

criterion_group!(benches, mock_wire);
criterion_main!(benches);

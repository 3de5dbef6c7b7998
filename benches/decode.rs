//! Decoding provider plugin messages into engine batches on one worker
//! thread, from the wire bytes of `ScanResponse`s as the host receives
//! them: CRN parsing, JSON properties (~200 bytes a node), interning.
//! Messages of 2,000 nodes and their edges (each node the source of one
//! edge and the target of the next), decoded into batches handed on at
//! [`BATCH_ROWS`] rows, as a decode worker does.
//! The plugin ingest budget (1,000,000 nodes/s over four gRPC streams on two
//! cores) needs about 500,000 nodes/s per worker.
//!
//! `mock/250000` decodes what `svc-plugin-mock` sends for a 250,000-node
//! estate (seed 100, messages of 2,000 nodes or edges, as the plugin
//! ingest bench asks for them; ~316 bytes of properties and 1.79 edges a
//! node): the decoder's cost on the estate the plugin ingest bench
//! streams, with its bytes warm rather than just read from a socket.

#![allow(clippy::unwrap_used, reason = "a bench that cannot set up has nothing to measure")]

use std::collections::HashMap;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svc_engine::Interner;
use svc_engine::graph::{EdgeBatch, NodeBatch};
use svc_ingest::decode::Decoder;
use svc_ingest::host::BATCH_ROWS;
use svc_plugin_mock::estate::{ScanConfig, stream};
use svc_proto::provider::v1 as pb;

/// Nodes and edges per message.
const PER_MESSAGE: usize = 2000;
/// Rows a batch takes before it is handed on.
const BATCH: usize = BATCH_ROWS;

/// `n` nodes and `n - 1` edges in `ScanResponse`s of [`PER_MESSAGE`]
/// nodes and edges each, as wire bytes.
fn messages(n: usize) -> Vec<Vec<u8>> {
    let nodes = (0..n)
        .map(|k| {
            let props = format!(
                r#"{{"state":"{}","size_gib":{},"volume_type":"gp2","iops":3000,"encrypted":true,"attached_to":"i-{:012x}","created_at":"2025-03-01T10:00:00Z","tags":{{"env":"prod","team":"core-{}","owner":"ops"}}}}"#,
                if k % 5 == 0 { "available" } else { "in-use" },
                100 + k % 400,
                k / 2,
                k % 7
            );
            pb::Node {
                crn: format!("crn:svc:aws:us-east-1:1234567890{:02}:volume:vol-{:017x}", k % 40, k),
                properties: props.into_bytes(),
                cost: 12.5,
            }
        })
        .collect();
    let edges = (1..n)
        .map(|k| pb::Edge {
            source_crn: format!("crn:svc:aws:us-east-1:1234567890{:02}:volume:vol-{:017x}", k % 40, k),
            target_crn: format!(
                "crn:svc:aws:us-east-1:1234567890{:02}:volume:vol-{:017x}",
                (k - 1) % 40,
                k - 1
            ),
            relation: "ATTACHED_TO".into(),
        })
        .collect();
    let (mut nodes, mut edges): (Vec<pb::Node>, Vec<pb::Edge>) = (nodes, edges);
    let mut out = Vec::new();
    while !nodes.is_empty() || !edges.is_empty() {
        let nodes: Vec<pb::Node> = nodes.drain(..PER_MESSAGE.min(nodes.len())).collect();
        let edges: Vec<pb::Edge> = edges.drain(..PER_MESSAGE.min(edges.len())).collect();
        out.push(prost::Message::encode_to_vec(&pb::ScanResponse { nodes, edges }));
    }
    out
}

/// The messages `svc-plugin-mock` sends for an estate of `n` nodes, as
/// wire bytes, and the nodes among them.
fn mock_messages(n: usize) -> (Vec<Vec<u8>>, usize) {
    let config = ScanConfig {
        seed: 100,
        scale: n,
        scan_seq: 1,
        batch_size: 2000,
    };
    let (mut out, mut nodes) = (Vec::new(), 0);
    let streamed = stream(&config, &HashMap::new(), None, |m| {
        nodes += m.nodes;
        out.push(m.response.as_bytes().to_vec());
        Ok::<(), ()>(())
    });
    assert!(streamed.is_ok());
    (out, nodes)
}

/// Decodes `messages` on one decoder into batches handed on at [`BATCH`]
/// rows, each new batch with room for an eighth more bytes than the last
/// one took, as a decode worker sizes them; the handed-on batches are kept,
/// as the stage keeps them.
fn decode_all(interner: &Interner, messages: &[Vec<u8>]) -> (Vec<NodeBatch>, Vec<EdgeBatch>) {
    let mut d = Decoder::new(interner);
    let (mut nodes, mut edges) = (NodeBatch::with_capacity(BATCH), EdgeBatch::with_capacity(BATCH));
    let (mut handed_nodes, mut handed_edges) = (Vec::new(), Vec::new());
    for m in messages {
        if nodes.len() + PER_MESSAGE > BATCH {
            let next = NodeBatch::with_capacity_bytes(BATCH, nodes.buffer_len() + nodes.buffer_len() / 8);
            handed_nodes.push(std::mem::replace(&mut nodes, next));
        }
        if edges.len() + PER_MESSAGE > BATCH {
            let next = EdgeBatch::with_capacity_bytes(BATCH, edges.buffer_len() + edges.buffer_len() / 8);
            handed_edges.push(std::mem::replace(&mut edges, next));
        }
        d.wire(m, &mut nodes, &mut edges).expect("a valid ScanResponse");
    }
    handed_nodes.push(nodes);
    handed_edges.push(edges);
    (handed_nodes, handed_edges)
}

fn decode(c: &mut Criterion) {
    let n = 100_000;
    let resp = messages(n);
    let interner = Interner::new();
    let mut group = c.benchmark_group("decode");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("nodes+edges/100000", |b| b.iter(|| decode_all(&interner, &resp)));
    let (mock, mock_nodes) = mock_messages(250_000);
    group.throughput(Throughput::Elements(mock_nodes as u64));
    group.bench_function("mock/250000", |b| b.iter(|| decode_all(&interner, &mock)));
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);

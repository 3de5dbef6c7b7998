//! Node properties (JSON documents from a plugin) through the host's
//! decoder: up to 16 documents, cut at 0xFF bytes, become the properties of
//! nodes of one type. One warm decoder (which learns key orders, tag sets
//! and symbols as it goes) must land every node exactly as a fresh decoder
//! reading the document through `serde_json` alone does: the same accepted
//! or rejected answer, the same rejection reason, and the same state,
//! creation time, properties and tags once landed.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use svc_engine::graph::NodeBatch;
use svc_engine::{Graph, Interner};
use svc_ingest::decode::Decoder;
use svc_proto::provider::v1 as pb;

/// A node as it landed: its CRN, state, creation time, properties and tags.
type Seen = (String, String, u64, Vec<(String, String)>, Vec<(String, String)>);

fn landed(i: &Arc<Interner>, nodes: NodeBatch) -> Vec<Seen> {
    let mut g = Graph::new(i.clone());
    g.ingest_nodes(&[nodes], 1, 1);
    let mut seen: Vec<Seen> = g
        .nodes()
        .map(|n| {
            let props = n
                .props()
                .map(|(k, v)| (i.resolve(k).to_string(), format!("{v:?}")))
                .collect();
            let tags = n
                .tags()
                .map(|(k, v)| (i.resolve(k).to_string(), i.resolve(v).to_string()))
                .collect();
            (n.crn(), i.resolve(n.state()).to_string(), n.creation_ts(), props, tags)
        })
        .collect();
    seen.sort();
    seen
}

fuzz_target!(|data: &[u8]| {
    let docs: Vec<&[u8]> = data.split(|&b| b == 0xff).take(16).collect();
    // Two types, so the decoder keeps a key memo per type; which one by the
    // document's length.
    let crn = |k: usize, doc: &[u8]| {
        if doc.len() % 3 == 0 {
            format!("crn:svc:aws:us-east-1:123456789012:instance:i-{k}")
        } else {
            format!("crn:svc:aws:us-east-1:123456789012:volume:vol-{k}")
        }
    };
    let node = |k: usize, doc: &[u8]| pb::Node {
        crn: crn(k, doc),
        properties: doc.to_vec(),
        cost: 1.5,
    };
    let i = Arc::new(Interner::new());
    let mut warm = Decoder::new(&i);
    let mut warm_nodes = NodeBatch::default();
    let mut warm_answers = Vec::new();
    for (k, doc) in docs.iter().enumerate() {
        let n = node(k, doc);
        warm_answers.push(warm.node((&n).into(), &mut warm_nodes));
    }
    let mut cold_nodes = NodeBatch::default();
    let mut cold_answers = Vec::new();
    let mut cold_reasons = Vec::new();
    for (k, doc) in docs.iter().enumerate() {
        let n = node(k, doc);
        let mut cold = Decoder::reference(&i);
        cold_answers.push(cold.node((&n).into(), &mut cold_nodes));
        cold_reasons.extend(cold.stats.reasons);
    }
    for (k, (w, c)) in warm_answers.iter().zip(&cold_answers).enumerate() {
        assert_eq!(w, c, "document {k} {:?}", String::from_utf8_lossy(docs[k]));
    }
    assert_eq!(warm.stats.reasons, cold_reasons);
    let (got, want) = (landed(&i, warm_nodes), landed(&i, cold_nodes));
    assert_eq!(got, want);
});

//! A provider's `ScanResponse`, from arbitrary wire bytes, through the
//! host's whole decoder (CRNs in either form, properties, costs, relation
//! strings, edges): it never panics; it refuses exactly the bytes prost
//! refuses; every node it accepts lands under the CRN `Crn::parse` gives;
//! and the warm decoder reading the wire bytes lands the same nodes and
//! edges, with the same counts and reasons, as a fresh decoder reading
//! prost's message with `serde_json` alone.

#![no_main]

use std::collections::BTreeSet;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use svc_engine::graph::{EdgeBatch, NodeBatch};
use svc_engine::{Crn, Graph, Interner};
use svc_ingest::decode::Decoder;
use svc_ingest::decode::wire::{Item, items};
use svc_proto::provider::v1 as pb;

type Nodes = Vec<(String, String, u32, Vec<(String, String)>, Vec<(String, String)>)>;
type Edges = Vec<(String, String, String, Vec<(String, String)>)>;

fn landed(i: &Arc<Interner>, nodes: NodeBatch, edges: EdgeBatch) -> (Nodes, Edges, usize) {
    let mut g = Graph::new(i.clone());
    g.ingest_nodes(&[nodes], 1, 1);
    let dangling = g.ingest_edges(&[edges], 1, 1).dangling;
    g.rebuild_adjacency(1);
    let mut ns: Nodes = g
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
            (
                n.crn(),
                i.resolve(n.ty()).to_string(),
                n.cost_usd_mo().to_bits(),
                props,
                tags,
            )
        })
        .collect();
    ns.sort();
    let mut es: Edges = g
        .edges()
        .map(|e| {
            let props = e
                .props()
                .map(|(k, v)| (i.resolve(k).to_string(), format!("{v:?}")))
                .collect();
            (
                g.crn(e.source()),
                g.crn(e.target()),
                format!("{:?}", e.relation()),
                props,
            )
        })
        .collect();
    es.sort();
    (ns, es, dangling)
}

fuzz_target!(|data: &[u8]| {
    let i = Arc::new(Interner::new());
    let mut warm = Decoder::new(&i);
    let (mut nodes, mut edges) = (NodeBatch::default(), EdgeBatch::default());
    let mut accepted = BTreeSet::new();
    let mut failed = false;
    for item in items(data) {
        let answer = match item {
            Ok(Item::Node(n)) => {
                let answer = warm.node(n, &mut nodes);
                if answer == Ok(true) {
                    let text = std::str::from_utf8(n.crn).expect("an accepted CRN is text");
                    let crn =
                        Crn::parse(text).unwrap_or_else(|e| panic!("accepted {text:?}, which does not parse: {e}"));
                    accepted.insert(crn.to_string());
                }
                answer.map(|_| ())
            }
            Ok(Item::Edge(e)) => warm.edge(e, &mut edges).map(|_| ()),
            Err(e) => Err(e),
        };
        if answer.is_err() {
            failed = true;
            break;
        }
    }
    let Ok(message) = pb::ScanResponse::decode(data) else {
        assert!(failed, "the decoder read what prost refuses");
        return;
    };
    assert!(!failed, "the decoder refused what prost reads");
    let mut cold = Decoder::reference(&i);
    let (mut want_nodes, mut want_edges) = (NodeBatch::default(), EdgeBatch::default());
    cold.response(&message, &mut want_nodes, &mut want_edges);
    // The message lists nodes before edges, the wire bytes may mix them:
    // the reasons are compared in order of their text, when all were kept.
    let (mut got_reasons, mut want_reasons) = (
        std::mem::take(&mut warm.stats.reasons),
        std::mem::take(&mut cold.stats.reasons),
    );
    assert_eq!(warm.stats, cold.stats);
    if warm.stats.rejected_nodes + warm.stats.rejected_edges <= 20 {
        got_reasons.sort();
        want_reasons.sort();
        assert_eq!(got_reasons, want_reasons);
    }
    let got = landed(&i, nodes, edges);
    let want = landed(&i, want_nodes, want_edges);
    let crns: BTreeSet<String> = got.0.iter().map(|n| n.0.clone()).collect();
    assert_eq!(crns, accepted, "the nodes landed are not those accepted");
    assert_eq!(got, want);
});

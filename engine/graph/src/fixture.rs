//! A hand-built estate for tests: nodes by CRN text, edges by CRN pairs
//! (feature `test-support` for other crates' tests).

#![allow(
    clippy::unwrap_used,
    reason = "test support: a malformed CRN is the calling test's bug"
)]

use std::sync::Arc;

use crate::crn::Crn;
use crate::graph::{EdgeBatch, Graph, IngestStats, NodeBatch, NodeInput, NodeKeyRef};
use crate::intern::Interner;
use crate::relation::Relation;

/// A hand-built estate: nodes by CRN text, edges by CRN pairs.
pub struct Estate {
    pub interner: Arc<Interner>,
    pub nodes: NodeBatch,
    pub edges: EdgeBatch,
}

impl Estate {
    pub fn new(interner: Arc<Interner>) -> Estate {
        Estate {
            interner,
            nodes: NodeBatch::default(),
            edges: EdgeBatch::default(),
        }
    }

    pub fn node(&mut self, crn: &str, state: &str, cost: f32) -> &mut Self {
        let c = Crn::parse(crn).unwrap();
        let i = &self.interner;
        let key = NodeKeyRef::intern(i, &c);
        let ty = i.intern(&c.node_type());
        let st = i.intern(state);
        let size = i.intern("size_gib");
        let env = (i.intern("env"), i.intern("prod"));
        self.nodes.push(
            NodeInput {
                key,
                ty,
                state: st,
                cost_usd_mo: cost,
                creation_ts: 1_700_000_000,
            },
            &[env],
            |w| {
                w.int(size, 100);
            },
        );
        self
    }

    pub fn edge(&mut self, a: &str, b: &str, rel: Relation) -> &mut Self {
        let (a, b) = (Crn::parse(a).unwrap(), Crn::parse(b).unwrap());
        let i = &self.interner;
        let relation = i.intern("relation");
        self.edges
            .push(NodeKeyRef::intern(i, &a), NodeKeyRef::intern(i, &b), rel, |w| {
                w.str(relation, rel.name())
            });
        self
    }

    pub fn scan_into(&mut self, g: &mut Graph, now: u64, scan: u32) -> (IngestStats, IngestStats) {
        let n = g.ingest_nodes(&[std::mem::take(&mut self.nodes)], now, scan);
        let e = g.ingest_edges(&[std::mem::take(&mut self.edges)], now, scan);
        (n, e)
    }
}

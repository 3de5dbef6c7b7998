//! A small hand-built estate for engine tests: nodes named by their
//! physical id, with properties from JSON, and edges between them by name.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::heuristics::builtin::ignore;
use svc_engine::relation::Relation;
use svc_engine::{Crn, Graph, Interner};

/// 2026-01-01T00:00:00Z: when the estate is observed.
pub const NOW: u64 = 1_767_225_600;
pub const DAY: u64 = 86_400;

pub fn ago(days: u64) -> String {
    ignore::date(NOW - days * DAY)
}

pub struct Estate {
    pub interner: Arc<Interner>,
    pub nodes: NodeBatch,
    pub edges: EdgeBatch,
    pub crns: BTreeMap<&'static str, String>,
}

impl Estate {
    pub fn new() -> Estate {
        Estate::with(Arc::new(Interner::new()))
    }

    /// An estate interning into `interner` (to ingest into a graph built before).
    pub fn with(interner: Arc<Interner>) -> Estate {
        Estate {
            interner,
            nodes: NodeBatch::default(),
            edges: EdgeBatch::default(),
            crns: BTreeMap::new(),
        }
    }

    /// A node called `name` (its physical id), created `age` days ago.
    #[allow(clippy::too_many_arguments)]
    pub fn node(
        &mut self,
        at: (&str, &str, &str),
        ty: &str,
        name: &'static str,
        state: &str,
        cost: f32,
        age: u64,
        props: Value,
        tags: &[(&str, &str)],
    ) {
        let (provider, region, account) = at;
        let (service, kind) = ty.split_once(':').expect("service:kind");
        let crn = Crn::from_parts(provider, region, service, kind, account, name);
        let i = &self.interner;
        let tags: Vec<_> = tags.iter().map(|(k, v)| (i.intern(k), i.intern(v))).collect();
        let input = NodeInput {
            key: NodeKeyRef::intern(i, &crn),
            ty: i.intern(ty),
            state: i.intern(state),
            cost_usd_mo: cost,
            creation_ts: NOW - age * DAY,
        };
        self.nodes.push(input, &tags, |w| {
            for (k, v) in props.as_object().expect("object") {
                let key = i.intern(k);
                match v {
                    Value::Null => w.null(key),
                    Value::Bool(b) => w.bool(key, *b),
                    Value::Number(n) if n.is_i64() => w.int(key, n.as_i64().unwrap_or(0)),
                    Value::Number(n) => w.float(key, n.as_f64().unwrap_or(0.0)),
                    Value::String(s) => w.str(key, s),
                    other => w.json(key, &other.to_string()),
                }
            }
        });
        self.crns.insert(name, crn.to_string());
    }

    pub fn edge(&mut self, from: &'static str, rel: Relation, to: &'static str) {
        let (a, b) = (
            Crn::parse(&self.crns[from]).expect("known"),
            Crn::parse(&self.crns[to]).expect("known"),
        );
        let i = &self.interner;
        self.edges
            .push(NodeKeyRef::intern(i, &a), NodeKeyRef::intern(i, &b), rel, |_| {});
    }
}

pub const AWS: (&str, &str, &str) = ("aws", "us-east-1", "123456789012");
pub const GCP: (&str, &str, &str) = ("gcp", "europe-west1", "proj-1");
pub const AZ: (&str, &str, &str) = ("azure", "westeurope", "sub-1");
pub const K8S: (&str, &str, &str) = ("kubernetes", "eu-west-1", "cluster-a");

impl Estate {
    /// The estate as a graph, ingested just before [`NOW`], adjacency built.
    pub fn graph(self) -> (Graph, BTreeMap<&'static str, String>) {
        let now_us = NOW * 1_000_000;
        let mut g = Graph::new(self.interner);
        g.ingest_nodes(&[self.nodes], now_us - 1, 1);
        g.ingest_edges(&[self.edges], now_us - 1, 1);
        g.rebuild_adjacency(now_us);
        (g, self.crns)
    }
}

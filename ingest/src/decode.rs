//! Decoding of provider plugin messages (`svc.provider.v1.ScanResponse`)
//! into the engine's interned batches: the work of one RPC worker.
//!
//! A node's CRN may be in plugin or graph form and becomes the graph form;
//! its JSON properties keep their types; `state`, `tags` and the creation
//! time (`creation_timestamp` in Unix seconds, or `created_at` in RFC 3339)
//! fill the columns of the same name, and every property except `tags` is
//! kept. Edge relation strings map onto the seven relationships (reversed
//! where the string says so), with the original kept as property
//! `relation`. A malformed node or edge is rejected with a reason and
//! counted; it never stops the rest.

use std::collections::BTreeMap;

use serde_json::Value;
use svc_engine::crn::Crn;
use svc_engine::graph::{EdgeBatch, NodeBatch, NodeInput, NodeKeyRef};
use svc_engine::props::PropWriter;
use svc_engine::relation::map_relation;
use svc_engine::{Interner, Sym};
use svc_proto::provider::v1 as pb;

/// Largest JSON properties document accepted for one node, in bytes.
pub const MAX_PROPERTIES_BYTES: usize = 256 * 1024;
/// Rejection reasons kept verbatim per decoder (the rest are only counted).
const KEPT_REASONS: usize = 20;

/// What a decoder has seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DecodeStats {
    pub nodes: u64,
    pub edges: u64,
    pub rejected_nodes: u64,
    pub rejected_edges: u64,
    /// Relation strings that mapped to nothing known (stored as `Uses`), with counts.
    pub unknown_relations: BTreeMap<String, u64>,
    /// The first rejection reasons, for the log and the scan report.
    pub reasons: Vec<String>,
}

/// Decodes plugin messages into batches; one per worker.
pub struct Decoder<'a> {
    interner: &'a Interner,
    tags_key: &'a str,
    relation: Sym,
    scratch_tags: Vec<(Sym, Sym)>,
    pub stats: DecodeStats,
}

impl<'a> Decoder<'a> {
    pub fn new(interner: &'a Interner) -> Decoder<'a> {
        Decoder {
            interner,
            tags_key: "tags",
            relation: interner.intern("relation"),
            scratch_tags: Vec::new(),
            stats: DecodeStats::default(),
        }
    }

    fn reject_node(&mut self, crn: &str, why: impl std::fmt::Display) {
        self.stats.rejected_nodes += 1;
        if self.stats.reasons.len() < KEPT_REASONS {
            self.stats.reasons.push(format!("node {crn:?} rejected: {why}"));
        }
    }

    fn reject_edge(&mut self, e: &pb::Edge, why: impl std::fmt::Display) {
        self.stats.rejected_edges += 1;
        if self.stats.reasons.len() < KEPT_REASONS {
            self.stats
                .reasons
                .push(format!("edge {:?} -> {:?} rejected: {why}", e.source_crn, e.target_crn));
        }
    }

    /// Decodes one node into `out`; `false` when it was rejected.
    pub fn node(&mut self, n: &pb::Node, out: &mut NodeBatch) -> bool {
        let crn = match Crn::parse(&n.crn) {
            Ok(c) => c,
            Err(e) => {
                self.reject_node(&n.crn, e);
                return false;
            }
        };
        if !n.cost.is_finite() || n.cost < 0.0 {
            self.reject_node(
                &n.crn,
                format_args!("cost {} is not a finite, non-negative number", n.cost),
            );
            return false;
        }
        if n.properties.len() > MAX_PROPERTIES_BYTES {
            self.reject_node(&n.crn, format_args!("properties exceed {MAX_PROPERTIES_BYTES} bytes"));
            return false;
        }
        let props: serde_json::Map<String, Value> = if n.properties.is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::from_slice::<Value>(&n.properties) {
                Ok(Value::Object(m)) => m,
                Ok(other) => {
                    self.reject_node(
                        &n.crn,
                        format_args!("properties must be a JSON object, not {}", kind(&other)),
                    );
                    return false;
                }
                Err(e) => {
                    self.reject_node(&n.crn, format_args!("properties are not valid JSON: {e}"));
                    return false;
                }
            }
        };
        let i = self.interner;
        let state = props.get("state").and_then(Value::as_str).unwrap_or("unknown");
        let creation_ts = creation_time(&props);
        self.scratch_tags.clear();
        if let Some(Value::Object(tags)) = props.get(self.tags_key) {
            for (k, v) in tags {
                let v = match v {
                    Value::String(s) => i.intern(s),
                    other => i.intern(&other.to_string()),
                };
                self.scratch_tags.push((i.intern(k), v));
            }
        }
        let input = NodeInput {
            key: NodeKeyRef::intern(i, &crn),
            ty: i.intern(&crn.node_type()),
            state: i.intern(state),
            cost_usd_mo: n.cost as f32,
            creation_ts,
        };
        let tags_key = self.tags_key;
        out.push(input, &self.scratch_tags, |w| {
            for (k, v) in &props {
                if k != tags_key {
                    write_value(w, i.intern(k), v);
                }
            }
        });
        self.stats.nodes += 1;
        true
    }

    /// Decodes one edge into `out`; `false` when it was rejected.
    pub fn edge(&mut self, e: &pb::Edge, out: &mut EdgeBatch) -> bool {
        let (src, dst) = match (Crn::parse(&e.source_crn), Crn::parse(&e.target_crn)) {
            (Ok(s), Ok(d)) => (s, d),
            (Err(err), _) | (_, Err(err)) => {
                self.reject_edge(e, err);
                return false;
            }
        };
        let mapped = map_relation(&e.relation);
        if !mapped.known {
            *self.stats.unknown_relations.entry(e.relation.clone()).or_default() += 1;
        }
        let (from, to) = if mapped.reversed { (&dst, &src) } else { (&src, &dst) };
        let i = self.interner;
        let relation = self.relation;
        out.push(
            NodeKeyRef::intern(i, from),
            NodeKeyRef::intern(i, to),
            mapped.relation,
            |w| w.str(relation, &e.relation),
        );
        self.stats.edges += 1;
        true
    }

    /// Decodes a whole scan response.
    pub fn response(&mut self, r: &pb::ScanResponse, nodes: &mut NodeBatch, edges: &mut EdgeBatch) {
        for n in &r.nodes {
            self.node(n, nodes);
        }
        for e in &r.edges {
            self.edge(e, edges);
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `creation_timestamp` (Unix seconds, or milliseconds when implausibly
/// large) or `created_at` (RFC 3339); 0 when neither is usable.
fn creation_time(props: &serde_json::Map<String, Value>) -> u64 {
    if let Some(ts) = props.get("creation_timestamp").and_then(Value::as_u64) {
        return if ts > 100_000_000_000 { ts / 1000 } else { ts };
    }
    props
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .and_then(|t| u64::try_from(t.timestamp()).ok())
        .unwrap_or(0)
}

fn write_value(w: &mut PropWriter<'_>, key: Sym, v: &Value) {
    match v {
        Value::Null => w.null(key),
        Value::Bool(b) => w.bool(key, *b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => w.int(key, i),
            (None, Some(f)) => w.float(key, f),
            (None, None) => w.str(key, &n.to_string()),
        },
        Value::String(s) => w.str(key, s),
        other => w.json(key, &other.to_string()),
    }
}

#[cfg(test)]
mod tests;

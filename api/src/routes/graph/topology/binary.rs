//! The topology snapshot in the binary graph form (SPEC 2.4).
//!
//! Every visible node, in CRN order (the `Node` key), and every visible
//! edge, ordered as in the JSON body; `version` is the graph generation
//! (the JSON's `topology_version` without its `v`), `last_updated` the Unix
//! seconds of the last commit. A node's `properties` hold its finding, as
//! the JSON's `heuristics_flagged` does: `rule_name` and `severity` (`1` to
//! `5`), only when it has one. `valid_to` is 0: only visible nodes and
//! edges are listed.
//!
//! FlatBuffers builds a buffer back to front, so the whole body is built
//! before it is sent: memory is the snapshot plus the buffer. The mock
//! estate at 1M nodes (1.83M edges) makes a body of 185 MB, about 185
//! bytes a node with its edges (the JSON: 701 MB), built in about 2.5 s
//! with 243 MiB of peak memory on top (`cargo bench --bench api -- fbs`).
//! Above [`CAP_BYTES`] (about five million nodes of that estate) the JSON
//! form, which streams, is answered instead.

use svc_engine::Sym;

use super::snapshot::Snapshot;
use crate::fbs::{EdgeFields, Finished, GraphEncoder, NodeFields, Str};
use crate::wire;

/// Largest binary body built: beyond it the JSON form is answered.
pub(super) const CAP_BYTES: usize = 1 << 30;

/// Node table, its slot in the node list and its vtable share, rounded up.
const NODE_BYTES: usize = 48;
/// A finding's two properties and their list.
const FLAG_BYTES: usize = 40;
/// Edge table and its slot in the edge list.
const EDGE_BYTES: usize = 28;

impl Snapshot {
    /// An upper bound of the binary body's size (strings shared once are
    /// counted once per tuple, CRNs in full).
    pub(super) fn binary_size(&self) -> usize {
        let prefix = |tuple: u32| self.prefixes.get(tuple as usize).map_or(0, Vec::len);
        let nodes: usize = self
            .crns
            .iter()
            .zip(&self.rest)
            .map(|(r, n)| {
                prefix(r.tuple) + r.id_len as usize + 8 + NODE_BYTES + if n.flag.is_some() { FLAG_BYTES } else { 0 }
            })
            .sum();
        nodes + self.edges.len() * EDGE_BYTES + self.strings.len() * 8 + 4096
    }

    /// The binary body; `last_updated` in Unix seconds.
    pub(super) fn encode(&self, last_updated: u64) -> Finished {
        let mut enc = GraphEncoder::with_capacity(self.binary_size(), self.crns.len(), self.edges.len());
        let mut syms: Vec<Option<Str>> = vec![None; self.strings.len()];
        let mut sym = |enc: &mut GraphEncoder, s: Sym| -> Str {
            match syms.get(s.index()).copied().flatten() {
                Some(v) => v,
                None => {
                    let v = enc.shared(self.sym(s));
                    if let Some(slot) = syms.get_mut(s.index()) {
                        *slot = Some(v);
                    }
                    v
                }
            }
        };
        let rule_key = enc.shared("rule_name");
        let severity_key = enc.shared("severity");
        let waste_rule = enc.shared(wire::WASTE_RULE);
        let severities: [Str; 10] = std::array::from_fn(|i| enc.shared(&i.to_string()));
        let prefixes: Vec<String> = self
            .tuples
            .iter()
            .map(|t| {
                let mut p = format!("crn:{}:", svc_engine::crn::NAMESPACE);
                for s in t {
                    p.push_str(self.sym(*s));
                    p.push(':');
                }
                p
            })
            .collect();
        let mut crns: Vec<Str> = Vec::with_capacity(self.crns.len());
        let mut text = String::new();
        for (r, n) in self.crns.iter().zip(&self.rest) {
            text.clear();
            text.push_str(prefixes.get(r.tuple as usize).map_or("", String::as_str));
            text.push_str(self.id(*r));
            let crn = enc.string(&text);
            crns.push(crn);
            let ty = sym(&mut enc, n.ty);
            let state = (!self.sym(n.state).is_empty()).then(|| sym(&mut enc, n.state));
            let flag;
            let properties: &[(Str, Str)] = match n.flag {
                None => &[],
                Some(verdict) => {
                    let rule = verdict.map_or(waste_rule, |v| sym(&mut enc, v));
                    let severity = severities[usize::from(n.severity.min(9))];
                    flag = [(rule_key, rule), (severity_key, severity)];
                    &flag
                }
            };
            enc.node(&NodeFields {
                crn,
                ty,
                state,
                cost_usd_mo: n.cost,
                properties,
                creation_timestamp: n.created,
                valid_to: 0,
            });
        }
        let mut source = 0usize;
        for (i, e) in self.edges.iter().enumerate() {
            while self.edge_off.get(source + 1).is_some_and(|&end| end as usize <= i) {
                source += 1;
            }
            let (Some(s), Some(t)) = (crns.get(source), crns.get((e >> 8) as usize)) else {
                continue;
            };
            let relationship = self.relations.get(usize::from(*e as u8)).map_or(0, |r| *r as u8);
            enc.edge(&EdgeFields {
                source_crn: *s,
                target_crn: *t,
                relationship,
                properties: &[],
                valid_to: 0,
            });
        }
        let version = u32::try_from(self.generation).unwrap_or(u32::MAX);
        enc.finish(version, last_updated)
    }
}

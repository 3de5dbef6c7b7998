//! The binary graph form (SPEC 2.4): FlatBuffers schema `schemas/graph.fbs`,
//! namespace `Graph`, file identifier `SVCG`, media type
//! `application/x-flatbuffers`.
//!
//! The topology endpoints answer it when asked (`routes::graph`). The
//! generated accessors and builders ([`Graph`], [`Node`], [`Edge`],
//! [`Property`], [`EdgeRelationship`], ...) are re-exported from
//! `graph_generated.rs`, which `schemas/regen.sh` writes (with the
//! dashboard's TypeScript in `web/src/fbs/` and the stamp
//! `graph.fbs.sha256`); never edit it by hand.
//!
//! Writing: [`GraphEncoder`] builds a buffer node by node without owned
//! copies (a node's CRN string is written once and shared by its edges;
//! repeated strings once per buffer); [`encode_graph`] does it from owned
//! structs. Reading: [`verified_root`] verifies a buffer for zero-copy
//! reads, [`decode_graph`] verifies and copies it out. Neither reader
//! panics on malformed input. This module knows nothing of HTTP, so the
//! fuzz target compiles it alone.

#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    clippy::unwrap_used,
    dead_code,
    deprecated,
    unused_imports,
    mismatched_lifetime_syntaxes,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs,
    unreachable_pub
)]
#[rustfmt::skip]
mod graph_generated;

use std::collections::HashMap;

pub use graph_generated::graph::*;

use flatbuffers::{FlatBufferBuilder, ForwardsUOffset, InvalidFlatbuffer, Vector, VerifierOptions, WIPOffset};

/// The media type of the binary graph form.
pub const MEDIA_TYPE: &str = "application/x-flatbuffers";

/// A string written into a [`GraphEncoder`]'s buffer, to be referenced by
/// the tables written after it.
#[derive(Clone, Copy, Debug)]
pub struct Str(WIPOffset<&'static str>);

/// One node's fields for [`GraphEncoder::node`].
#[derive(Clone, Copy, Debug)]
pub struct NodeFields<'p> {
    pub crn: Str,
    pub ty: Str,
    /// `None` leaves the field out (read back as empty).
    pub state: Option<Str>,
    pub cost_usd_mo: f32,
    /// Key/value pairs, in order.
    pub properties: &'p [(Str, Str)],
    pub creation_timestamp: u64,
    pub valid_to: u64,
}

/// One edge's fields for [`GraphEncoder::edge`].
#[derive(Clone, Copy, Debug)]
pub struct EdgeFields<'p> {
    pub source_crn: Str,
    pub target_crn: Str,
    /// `EdgeRelationship` value (SPEC 2.3: 0 AttachedTo ... 6 Uses).
    pub relationship: u8,
    pub properties: &'p [(Str, Str)],
    pub valid_to: u64,
}

/// A finished `Graph` buffer: the bytes are `buf[head..]` (the builder
/// writes back to front).
pub struct Finished {
    pub buf: Vec<u8>,
    pub head: usize,
}

impl Finished {
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(self.head..).unwrap_or_default()
    }

    /// The bytes on their own (moves them to the front of the vector).
    pub fn into_vec(mut self) -> Vec<u8> {
        self.buf.drain(..self.head.min(self.buf.len()));
        self.buf
    }
}

/// Builds a `Graph` buffer (file identifier `SVCG`) one string, node and
/// edge at a time.
///
/// A table only references strings written before it. Nodes must be added
/// in CRN byte order (`crn` is the table's key, so readers can use
/// `Vector::lookup_by_key`); edges in any order. The whole buffer is held
/// in memory until [`GraphEncoder::finish`]: FlatBuffers builds back to
/// front.
///
/// # Panics
///
/// The builder panics when the buffer would exceed the FlatBuffers limit
/// of 2 GiB; callers bound their input well below it.
pub struct GraphEncoder {
    fbb: FlatBufferBuilder<'static>,
    shared: HashMap<Box<str>, Str>,
    scratch: Vec<WIPOffset<Property<'static>>>,
    nodes: Vec<WIPOffset<Node<'static>>>,
    edges: Vec<WIPOffset<Edge<'static>>>,
}

impl GraphEncoder {
    /// An encoder whose buffer starts with `bytes` of room (capped at 1 GiB),
    /// expecting about `nodes` nodes and `edges` edges.
    #[must_use]
    pub fn with_capacity(bytes: usize, nodes: usize, edges: usize) -> GraphEncoder {
        GraphEncoder {
            fbb: FlatBufferBuilder::with_capacity(bytes.clamp(1024, 1 << 30)),
            shared: HashMap::new(),
            scratch: Vec::new(),
            nodes: Vec::with_capacity(nodes),
            edges: Vec::with_capacity(edges),
        }
    }

    /// Writes `s` (once per call: for text that does not repeat, like CRNs).
    pub fn string(&mut self, s: &str) -> Str {
        Str(self.fbb.create_string(s))
    }

    /// Writes `s` once per buffer, however often it is asked for (for text
    /// that repeats: types, states, property keys and common values).
    pub fn shared(&mut self, s: &str) -> Str {
        if let Some(v) = self.shared.get(s) {
            return *v;
        }
        let v = self.string(s);
        self.shared.insert(s.into(), v);
        v
    }

    fn properties(
        &mut self,
        props: &[(Str, Str)],
    ) -> Option<WIPOffset<Vector<'static, ForwardsUOffset<Property<'static>>>>> {
        if props.is_empty() {
            return None;
        }
        self.scratch.clear();
        for (k, v) in props {
            let p = Property::create(
                &mut self.fbb,
                &PropertyArgs {
                    key: Some(k.0),
                    value: Some(v.0),
                },
            );
            self.scratch.push(p);
        }
        Some(self.fbb.create_vector(&self.scratch))
    }

    /// Adds a node (after the previous one in CRN order).
    pub fn node(&mut self, n: &NodeFields<'_>) {
        let properties = self.properties(n.properties);
        let node = Node::create(
            &mut self.fbb,
            &NodeArgs {
                crn: Some(n.crn.0),
                type_: Some(n.ty.0),
                state: n.state.map(|s| s.0),
                cost_usd_mo: n.cost_usd_mo,
                properties,
                creation_timestamp: n.creation_timestamp,
                valid_to: n.valid_to,
            },
        );
        self.nodes.push(node);
    }

    /// Adds an edge.
    pub fn edge(&mut self, e: &EdgeFields<'_>) {
        let properties = self.properties(e.properties);
        let edge = Edge::create(
            &mut self.fbb,
            &EdgeArgs {
                source_crn: Some(e.source_crn.0),
                target_crn: Some(e.target_crn.0),
                relationship: EdgeRelationship(e.relationship),
                properties,
                valid_to: e.valid_to,
            },
        );
        self.edges.push(edge);
    }

    /// Bytes written so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.fbb.unfinished_data().len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the node and edge lists and the root, with the file identifier.
    #[must_use]
    pub fn finish(mut self, version: u32, last_updated: u64) -> Finished {
        let nodes = self.fbb.create_vector(&self.nodes);
        drop(std::mem::take(&mut self.nodes));
        let edges = self.fbb.create_vector(&self.edges);
        drop(std::mem::take(&mut self.edges));
        let root = Graph::create(
            &mut self.fbb,
            &GraphArgs {
                nodes: Some(nodes),
                edges: Some(edges),
                version,
                last_updated,
            },
        );
        finish_graph_buffer(&mut self.fbb, root);
        let (buf, head) = self.fbb.collapse();
        Finished { buf, head }
    }
}

/// A node in owned form, the fields of the `Node` table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FbNode {
    /// Stable unique resource name; the table key.
    pub crn: String,
    /// Resource type, for example `ec2:volume`.
    pub ty: String,
    /// Provider-reported lifecycle state; empty when unknown.
    pub state: String,
    /// Estimated monthly cost in USD.
    pub cost_usd_mo: f32,
    /// Provider-specific attributes as key/value strings, in order.
    pub properties: Vec<(String, String)>,
    /// Unix epoch seconds of resource creation.
    pub creation_timestamp: u64,
    /// Logical deletion timestamp; 0 means active.
    pub valid_to: u64,
}

/// An edge in owned form, the fields of the `Edge` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FbEdge {
    /// CRN of the source node (A).
    pub source_crn: String,
    /// CRN of the target node (B).
    pub target_crn: String,
    /// `EdgeRelationship` value (SPEC 2.3: 0 AttachedTo ... 6 Uses). Values
    /// outside the enumeration are carried unchanged.
    pub relationship: u8,
    /// Edge attributes as key/value strings, in order.
    pub properties: Vec<(String, String)>,
    /// Isolation boundary; 0 means active.
    pub valid_to: u64,
}

/// A decoded graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FbGraph {
    pub nodes: Vec<FbNode>,
    pub edges: Vec<FbEdge>,
    pub version: u32,
    pub last_updated: u64,
}

/// Builds a finished `Graph` buffer from owned structs.
///
/// Nodes are written sorted by CRN (byte order; equal CRNs keep their
/// relative order); edges in the given order. Empty `state` strings are
/// left out and read back as empty; a cost of `-0.0` reads back as `0.0`.
///
/// # Panics
///
/// When the buffer would exceed the FlatBuffers limit of 2 GiB.
#[must_use]
pub fn encode_graph(g: &FbGraph) -> Vec<u8> {
    let props_size = |p: &[(String, String)]| p.iter().map(|(k, v)| 24 + k.len() + v.len()).sum::<usize>();
    let estimate = 64
        + g.nodes
            .iter()
            .map(|n| 64 + n.crn.len() + n.ty.len() + n.state.len() + props_size(&n.properties))
            .sum::<usize>()
        + g.edges
            .iter()
            .map(|e| 48 + e.source_crn.len() + e.target_crn.len() + props_size(&e.properties))
            .sum::<usize>();
    let mut enc = GraphEncoder::with_capacity(estimate, g.nodes.len(), g.edges.len());
    let mut order: Vec<&FbNode> = g.nodes.iter().collect();
    order.sort_by(|a, b| a.crn.cmp(&b.crn));
    let write_props = |enc: &mut GraphEncoder, list: &[(String, String)]| -> Vec<(Str, Str)> {
        list.iter().map(|(k, v)| (enc.shared(k), enc.shared(v))).collect()
    };
    for n in order {
        let crn = enc.shared(&n.crn);
        let ty = enc.shared(&n.ty);
        let state = (!n.state.is_empty()).then(|| enc.shared(&n.state));
        let p = write_props(&mut enc, &n.properties);
        enc.node(&NodeFields {
            crn,
            ty,
            state,
            cost_usd_mo: n.cost_usd_mo,
            properties: &p,
            creation_timestamp: n.creation_timestamp,
            valid_to: n.valid_to,
        });
    }
    for e in &g.edges {
        let source_crn = enc.shared(&e.source_crn);
        let target_crn = enc.shared(&e.target_crn);
        let p = write_props(&mut enc, &e.properties);
        enc.edge(&EdgeFields {
            source_crn,
            target_crn,
            relationship: e.relationship,
            properties: &p,
            valid_to: e.valid_to,
        });
    }
    enc.finish(g.version, g.last_updated).into_vec()
}

/// Verifies `bytes` as a `Graph` buffer and returns its root for zero-copy
/// reads.
///
/// The verifier's table limit grows with the buffer (a table takes at least
/// four bytes), so large graphs are accepted while the work stays
/// proportional to the input. The file identifier is not required.
///
/// # Errors
///
/// The verifier's error when `bytes` is not a valid `Graph` buffer,
/// including a missing required field (`crn`, `type`, `source_crn`,
/// `target_crn`).
pub fn verified_root(bytes: &[u8]) -> Result<Graph<'_>, InvalidFlatbuffer> {
    let defaults = VerifierOptions::default();
    let opts = VerifierOptions {
        max_tables: defaults.max_tables.max(bytes.len() / 4),
        ..defaults
    };
    root_as_graph_with_opts(&opts, bytes)
}

/// Verifies a `Graph` buffer and copies it into owned structs. Absent
/// strings and lists read as empty; nodes and edges come in buffer order.
/// Never panics, whatever the input.
///
/// # Errors
///
/// The verifier's error when `bytes` is not a valid `Graph` buffer.
pub fn decode_graph(bytes: &[u8]) -> Result<FbGraph, InvalidFlatbuffer> {
    let g = verified_root(bytes)?;
    let nodes = g
        .nodes()
        .map(|v| {
            v.iter()
                .map(|n| FbNode {
                    crn: n.crn().to_owned(),
                    ty: n.type_().to_owned(),
                    state: n.state().unwrap_or_default().to_owned(),
                    cost_usd_mo: n.cost_usd_mo(),
                    properties: read_properties(n.properties()),
                    creation_timestamp: n.creation_timestamp(),
                    valid_to: n.valid_to(),
                })
                .collect()
        })
        .unwrap_or_default();
    let edges = g
        .edges()
        .map(|v| {
            v.iter()
                .map(|e| FbEdge {
                    source_crn: e.source_crn().to_owned(),
                    target_crn: e.target_crn().to_owned(),
                    relationship: e.relationship().0,
                    properties: read_properties(e.properties()),
                    valid_to: e.valid_to(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(FbGraph {
        nodes,
        edges,
        version: g.version(),
        last_updated: g.last_updated(),
    })
}

fn read_properties(props: Option<Vector<'_, ForwardsUOffset<Property<'_>>>>) -> Vec<(String, String)> {
    props
        .map(|v| {
            v.iter()
                .map(|p| {
                    (
                        p.key().unwrap_or_default().to_owned(),
                        p.value().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;

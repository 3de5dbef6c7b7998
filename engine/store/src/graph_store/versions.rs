//! What a commit writes ([`Versions`]): the versions a scan changed
//! ([`Changes`]) or rows read straight from the graph's shards
//! ([`GraphVersions`]), each encoded as segments.

use rayon::prelude::*;
use svc_graph::graph::{Changes, DirtyRows, Graph, NodeVersion};
use svc_graph::ids::NodeId;

use std::ops::Range;

use super::segments::{FNV_START, SEGMENT_SHARDS, by_key, fill, fnv, fnv_all, place, shard_of};
use crate::codec::{
    edge_key_into, encode_edge_fields_into, encode_edge_value_into, encode_node_into, encoded_edge_fields_len,
    encoded_edge_value_len, encoded_node_len, relation_key_into,
};

/// A part of a commit's segments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Nodes,
    Edges,
}

/// What receives a commit's segments: a part, the first segment shard of
/// the range, and the range's buffers (one per shard, uncompressed).
/// [`Stopped`] ends the writing.
pub type Sink<'a> = dyn FnMut(Part, u16, Vec<Vec<u8>>) -> Result<(), Stopped> + 'a;

/// A [`Sink`] that takes no more segments (its receiver failed, and says why).
#[derive(Debug)]
pub struct Stopped;

/// What a commit writes: node and edge versions, as segments.
pub trait Versions: Sync {
    /// How many node and edge versions.
    fn counts(&self) -> (usize, usize);
    /// The node and the edge segments, `groups` ranges of segment shards
    /// at a time: each range's buffers go to `sink` (nodes, then edges)
    /// before the next range's are built, so at most a range's are held.
    fn write_segments(&self, groups: u16, sink: &mut Sink<'_>) -> Result<(), Stopped>;
    /// Every node and edge segment at once, by segment shard.
    fn segments(&self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let (mut nodes, mut edges) = (Vec::new(), Vec::new());
        let written = self.write_segments(1, &mut |part, _, buffers| {
            match part {
                Part::Nodes => nodes.extend(buffers),
                Part::Edges => edges.extend(buffers),
            }
            Ok(())
        });
        debug_assert!(written.is_ok(), "collecting segments cannot fail");
        (nodes, edges)
    }
}

/// Builds each of `groups` ranges of segment shards with `nodes`, then
/// with `edges`, and hands them to `sink` in that order (the order of the
/// segments' keys).
fn by_ranges(
    groups: u16,
    nodes: impl Fn(Range<u16>) -> Vec<Vec<u8>> + Sync,
    edges: impl Fn(Range<u16>) -> Vec<Vec<u8>> + Sync,
    sink: &mut Sink<'_>,
) -> Result<(), Stopped> {
    let per = SEGMENT_SHARDS.div_ceil(groups.clamp(1, SEGMENT_SHARDS));
    let ranges = || {
        (0..SEGMENT_SHARDS)
            .step_by(usize::from(per))
            .map(move |s| s..(s + per).min(SEGMENT_SHARDS))
    };
    for range in ranges() {
        sink(Part::Nodes, range.start, nodes(range))?;
    }
    for range in ranges() {
        sink(Part::Edges, range.start, edges(range))?;
    }
    Ok(())
}

impl Versions for Changes {
    fn counts(&self) -> (usize, usize) {
        (self.nodes.len(), self.edges.len())
    }

    fn write_segments(&self, groups: u16, sink: &mut Sink<'_>) -> Result<(), Stopped> {
        let node_key = |n: &NodeVersion, k: &mut Vec<u8>| k.extend_from_slice(n.crn.as_bytes());
        let (nodes, edges) = rayon::join(
            || place(&self.nodes, by_key(node_key), |n| encoded_node_len(&n.row)),
            || place(&self.edges, by_key(edge_key_into), encoded_edge_value_len),
        );
        by_ranges(
            groups,
            |r| fill(&self.nodes, &nodes, r, node_key, |n, v| encode_node_into(&n.row, v)),
            |r| fill(&self.edges, &edges, r, edge_key_into, encode_edge_value_into),
            sink,
        )
    }
}

/// Every node's CRN text, by node shard and row, and its FNV-1a hash
/// (which places the node's versions, and starts its edges' keys).
struct CrnTable {
    shards: Vec<CrnShard>,
    generations: Vec<u32>,
}

struct CrnShard {
    /// The texts one after another.
    text: Vec<u8>,
    /// Where each row's text starts (and, one on, ends).
    at: Vec<u32>,
    /// Each row's text's hash.
    hash: Vec<u64>,
}

impl CrnTable {
    fn build(g: &Graph, reader: &svc_graph::intern::InternerReader<'_>) -> CrnTable {
        let shards = g
            .node_shards()
            .par_iter()
            .enumerate()
            .map(|(s, shard)| {
                let mut text = Vec::with_capacity(shard.len() * 72);
                let mut at = Vec::with_capacity(shard.len() + 1);
                at.push(0);
                for r in 0..shard.len() as u32 {
                    g.crn_into(reader, NodeId::new(s, r, shard.generation), &mut text);
                    at.push(text.len() as u32);
                }
                let mut jobs: Vec<(u64, &[u8])> = at
                    .windows(2)
                    .map(|w| (FNV_START, &text[w[0] as usize..w[1] as usize]))
                    .collect();
                fnv_all(&mut jobs);
                let hash = jobs.into_iter().map(|(h, _)| h).collect();
                CrnShard { text, at, hash }
            })
            .collect();
        let generations = g.node_shards().iter().map(|s| s.generation).collect();
        CrnTable { shards, generations }
    }

    /// A node's CRN text and its hash.
    fn get(&self, id: NodeId) -> Option<(&[u8], u64)> {
        if self.generations.get(id.shard()) != Some(&id.generation()) {
            return None;
        }
        let shard = self.shards.get(id.shard())?;
        let r = id.row() as usize;
        let text = shard
            .text
            .get(*shard.at.get(r)? as usize..*shard.at.get(r + 1)? as usize)?;
        Some((text, *shard.hash.get(r)?))
    }
}

/// Rows of a graph, encoded straight from its shards: the same segments
/// [`Changes`] of those rows give, without an owned copy of every version.
pub struct GraphVersions<'g> {
    pub graph: &'g Graph,
    pub rows: DirtyRows,
}

impl Versions for GraphVersions<'_> {
    fn counts(&self) -> (usize, usize) {
        self.rows.counts()
    }

    fn write_segments(&self, groups: u16, sink: &mut Sink<'_>) -> Result<(), Stopped> {
        let g = self.graph;
        let reader = g.interner().reader();
        let reader = &reader;
        let (nodes, edges) = self.rows.flat(g);
        let node_id = |&(s, r): &(u32, u32)| NodeId::new(s as usize, r, g.node_shards()[s as usize].generation);
        let edge = |&(s, r): &(u32, u32)| (&g.edge_shards()[s as usize], r as usize);
        // Unless few rows are written, every node's CRN is rendered once,
        // shard by shard in row order, instead of at each mention and pass
        // from rows scattered over the graph (a later scan's ~100k
        // versions mention ~250k nodes twice each).
        let table = (nodes.len() + 2 * edges.len() > g.node_rows() / 16).then(|| CrnTable::build(g, reader));
        let crn = |id: NodeId, k: &mut Vec<u8>| match table.as_ref().and_then(|t| t.get(id)) {
            Some((text, _)) => k.extend_from_slice(text),
            None => g.crn_into(reader, id, k),
        };
        let node_key = |n: &(u32, u32), k: &mut Vec<u8>| crn(node_id(n), k);
        let edge_key = |e: &(u32, u32), k: &mut Vec<u8>| {
            let (shard, r) = edge(e);
            crn(g.node_id(shard.src[r]), k);
            relation_key_into(shard.rel[r], k);
            crn(g.node_id(shard.dst[r]), k);
        };
        // A key's shard and length come from the table's hashes where it
        // has them (without writing the key), else from the key written out.
        let node_value = |&(s, r): &(u32, u32), v: &mut Vec<u8>| {
            crate::codec::encode_fields_into(&g.node_shards()[s as usize].fields(r), v)
        };
        let edge_value = |e: &(u32, u32), v: &mut Vec<u8>| {
            let (shard, r) = edge(e);
            encode_edge_fields_into(&shard.fields(r as u32), v);
        };
        let (node_places, edge_places) = rayon::join(
            || {
                place(
                    &nodes,
                    |run, placed| match &table {
                        // The table has every node's hash.
                        Some(t) => {
                            for n in run {
                                match t.get(node_id(n)) {
                                    Some((text, hash)) => placed.push((shard_of(hash), text.len() as u32)),
                                    None => by_key(node_key)(std::slice::from_ref(n), placed),
                                }
                            }
                        }
                        None => by_key(node_key)(run, placed),
                    },
                    |&(s, r)| crate::codec::encoded_fields_len(&g.node_shards()[s as usize].fields(r)),
                )
            },
            || {
                place(
                    &edges,
                    |run, placed| {
                        let Some(t) = &table else {
                            return by_key(edge_key)(run, placed);
                        };
                        // An edge's key hash carried on from its source's,
                        // over the relation and the target's CRN; hashed
                        // together once the run's are known.
                        let mut rel = Vec::new();
                        let mut jobs: Vec<(u64, &[u8])> = Vec::with_capacity(run.len());
                        let mut hashed = Vec::with_capacity(run.len());
                        for e in run {
                            let (shard, r) = edge(e);
                            match (t.get(g.node_id(shard.src[r])), t.get(g.node_id(shard.dst[r]))) {
                                (Some((src, hash)), Some((dst, _))) => {
                                    rel.clear();
                                    relation_key_into(shard.rel[r], &mut rel);
                                    jobs.push((fnv(hash, &rel), dst));
                                    hashed.push(placed.len());
                                    placed.push((0, (src.len() + rel.len() + dst.len()) as u32));
                                }
                                _ => by_key(edge_key)(std::slice::from_ref(e), placed),
                            }
                        }
                        fnv_all(&mut jobs);
                        for (i, (hash, _)) in hashed.into_iter().zip(jobs) {
                            placed[i].0 = shard_of(hash);
                        }
                    },
                    |e| {
                        let (shard, r) = edge(e);
                        encoded_edge_fields_len(&shard.fields(r as u32))
                    },
                )
            },
        );
        by_ranges(
            groups,
            |r| fill(&nodes, &node_places, r, node_key, node_value),
            |r| fill(&edges, &edge_places, r, edge_key, edge_value),
            sink,
        )
    }
}

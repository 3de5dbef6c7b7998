//! What a commit writes ([`Versions`]): the versions a scan changed
//! ([`Changes`]) or rows read straight from the graph's shards
//! ([`GraphVersions`]), each encoded as segments.

use rayon::prelude::*;
use svc_graph::graph::{Changes, DirtyRows, Graph, NodeVersion};
use svc_graph::ids::{NodeId, NodeSlot};

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

/// The CRN text of every node a commit mentions (or of every node), by
/// node shard and row, and its FNV-1a hash (which places the node's
/// versions, and starts its edges' keys): each rendered and hashed once,
/// shard by shard in row order, not at each mention and pass.
struct CrnTable {
    shards: Vec<CrnShard>,
    generations: Vec<u32>,
}

struct CrnShard {
    /// The rows held, ascending; `None`: every row of the shard.
    rows: Option<Vec<u32>>,
    /// The texts one after another.
    text: Vec<u8>,
    /// Where each held row's text starts (and, one on, ends).
    at: Vec<u32>,
    /// Each held row's text's hash.
    hash: Vec<u64>,
}

impl CrnTable {
    /// The table of every node (`mentioned` is `None`), or of the nodes
    /// `mentioned`, by shard and row, in any order and repeated.
    fn build(g: &Graph, reader: &svc_graph::intern::InternerReader<'_>, mentioned: Option<Vec<NodeSlot>>) -> CrnTable {
        let by_shard: Vec<Option<Vec<u32>>> = match mentioned {
            None => vec![None; g.node_shards().len()],
            Some(mut slots) => {
                slots.par_sort_unstable_by_key(|s| s.raw());
                slots.dedup();
                let mut by_shard = vec![Some(Vec::new()); g.node_shards().len()];
                for slot in slots {
                    if let Some(Some(rows)) = by_shard.get_mut(slot.shard()) {
                        rows.push(slot.row());
                    }
                }
                by_shard
            }
        };
        let shards = g
            .node_shards()
            .par_iter()
            .zip(by_shard)
            .enumerate()
            .map(|(s, (shard, rows))| {
                let held = rows.as_ref().map_or(shard.len(), Vec::len);
                let mut text = Vec::with_capacity(held * 72);
                let mut at = Vec::with_capacity(held + 1);
                at.push(0);
                let mut render = |r: u32| {
                    g.crn_into(reader, NodeId::new(s, r, shard.generation), &mut text);
                    at.push(text.len() as u32);
                };
                match &rows {
                    Some(rows) => rows.iter().copied().for_each(&mut render),
                    None => (0..shard.len() as u32).for_each(&mut render),
                }
                let mut jobs: Vec<(u64, &[u8])> = at
                    .windows(2)
                    .map(|w| (FNV_START, &text[w[0] as usize..w[1] as usize]))
                    .collect();
                fnv_all(&mut jobs);
                let hash = jobs.into_iter().map(|(h, _)| h).collect();
                CrnShard { rows, text, at, hash }
            })
            .collect();
        let generations = g.node_shards().iter().map(|s| s.generation).collect();
        CrnTable { shards, generations }
    }

    /// A node's CRN text and its hash, if the table holds it.
    fn get(&self, id: NodeId) -> Option<(&[u8], u64)> {
        if self.generations.get(id.shard()) != Some(&id.generation()) {
            return None;
        }
        let shard = self.shards.get(id.shard())?;
        let r = match &shard.rows {
            Some(rows) => rows.binary_search(&id.row()).ok()?,
            None => id.row() as usize,
        };
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
        // Each node's CRN is rendered once, shard by shard in row order,
        // instead of at each mention and pass from rows scattered over the
        // graph: every node's when the versions mention more than half as
        // many nodes as there are (a first scan), else the ones mentioned
        // (a later scan at 10^7 writes ~0.9M versions, mentioning ~1.5M
        // nodes, and would render and hash all 10M).
        let mentions = nodes.len() + 2 * edges.len();
        let mentioned = (2 * mentions <= g.node_rows()).then(|| {
            let mut slots: Vec<NodeSlot> = Vec::with_capacity(mentions);
            slots.extend(nodes.iter().map(|&(s, r)| NodeSlot::new(s as usize, r)));
            slots.par_extend(edges.par_iter().flat_map_iter(|e| {
                let (shard, r) = edge(e);
                [shard.src[r], shard.dst[r]]
            }));
            slots
        });
        let table = CrnTable::build(g, reader, mentioned);
        let crn = |id: NodeId, k: &mut Vec<u8>| match table.get(id) {
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
                    |run, placed| {
                        for n in run {
                            match table.get(node_id(n)) {
                                Some((text, hash)) => placed.push((shard_of(hash), text.len() as u32)),
                                None => by_key(node_key)(std::slice::from_ref(n), placed),
                            }
                        }
                    },
                    |&(s, r)| crate::codec::encoded_fields_len(&g.node_shards()[s as usize].fields(r)),
                )
            },
            || {
                place(
                    &edges,
                    |run, placed| {
                        // An edge's key hash carried on from its source's,
                        // over the relation and the target's CRN; hashed
                        // together once the run's are known.
                        let mut rel = Vec::new();
                        let mut jobs: Vec<(u64, &[u8])> = Vec::with_capacity(run.len());
                        let mut hashed = Vec::with_capacity(run.len());
                        for e in run {
                            let (shard, r) = edge(e);
                            match (table.get(g.node_id(shard.src[r])), table.get(g.node_id(shard.dst[r]))) {
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

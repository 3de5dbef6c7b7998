//! Compressed sparse row adjacency over the visible edges, rebuilt after each
//! scan. Nodes are numbered densely: shard by shard, row by row.
//!
//! A rebuild after a small change patches the previous index instead of
//! starting over (`patch`): the shards note the rows whose visibility may
//! have changed since the last build (`Touched` in `shard`); every edge
//! of such a row, or incident to such a node, is taken out of its source's
//! and target's ranges and put back when it is visible now. Every other
//! range is copied as it was, its offsets shifted by the edges added or
//! removed before it and its neighbours renumbered when node shards grew.
//! Within a range edges stay in ascending packed id order, so the result is
//! the index a full build gives.

use crate::ids::{EdgeId, NODE_SHARDS, NodeId};
use crate::relation::Relation;

/// How many times the index was built from scratch and patched.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub struct Builds {
    pub full: u64,
    pub patched: u64,
}

#[derive(Default)]
pub struct Adjacency {
    /// `base[s]` is the dense index of row 0 of node shard `s`; `base[256]` is the total.
    pub base: Vec<u32>,
    pub out_off: Vec<u32>,
    /// Edges packed as `shard << 25 | row` (see [`pack`]).
    pub out_edge: Vec<u32>,
    pub out_node: Vec<u32>,
    /// Each listed edge's relation, beside it: a walk for one relation
    /// does not read the edge rows of the others.
    pub out_rel: Vec<Relation>,
    pub in_off: Vec<u32>,
    pub in_edge: Vec<u32>,
    pub in_node: Vec<u32>,
    pub in_rel: Vec<Relation>,
    /// `now_us` of the last build; `None` before the first.
    pub built_at: Option<u64>,
    /// The earliest `valid_to` later than `built_at` among the rows not
    /// touched since: until then an untouched row looks as it did.
    pub horizon: u64,
    pub builds: Builds,
}

impl Adjacency {
    /// Starts loading where dense node `d`'s edges are listed.
    pub fn prefetch_offsets(&self, d: u32) {
        let d = d as usize;
        for off in [&self.out_off, &self.in_off] {
            if let Some(x) = off.get(d) {
                super::shard::prefetch(x);
            }
        }
    }

    /// Starts loading dense node `d`'s edge lists.
    pub fn prefetch_lists(&self, d: u32) {
        for (off, edge, node, rel) in [
            (&self.out_off, &self.out_edge, &self.out_node, &self.out_rel),
            (&self.in_off, &self.in_edge, &self.in_node, &self.in_rel),
        ] {
            let (a, _) = range(off, d);
            if let (Some(e), Some(n), Some(r)) = (edge.get(a), node.get(a), rel.get(a)) {
                super::shard::prefetch(e);
                super::shard::prefetch(n);
                super::shard::prefetch(r);
            }
        }
    }

    pub fn node_count(&self) -> usize {
        self.base.last().copied().unwrap_or(0) as usize
    }

    #[inline]
    pub fn dense(&self, id: NodeId) -> Option<u32> {
        let base = *self.base.get(id.shard())?;
        let next = *self.base.get(id.shard() + 1)?;
        let d = base.checked_add(id.row())?;
        (d < next).then_some(d)
    }

    /// The node id of a dense index (generation taken from `generation_of`).
    pub fn node_id(&self, dense: u32, generation_of: impl Fn(usize) -> u32) -> NodeId {
        // `base` is sorted; the shard is the last one whose base is <= dense.
        let shard = self.base.partition_point(|&b| b <= dense).saturating_sub(1);
        NodeId::new(shard, dense - self.base[shard], generation_of(shard))
    }

    /// Outgoing `(edge, dense target)` of a dense node. Reads no relation
    /// (unlike [`Adjacency::side`]): a walk over every edge, as blast radius
    /// does, is faster without (p99 7.8-8.1 against 9.0-9.1 µs at 1M).
    pub fn out(&self, dense: u32) -> impl Iterator<Item = (EdgeId, u32)> + '_ {
        let (a, b) = range(&self.out_off, dense);
        self.out_edge[a..b]
            .iter()
            .map(|&e| unpack(e))
            .zip(self.out_node[a..b].iter().copied())
    }

    /// `(edge, dense other end, relation)` of a dense node's outgoing
    /// (`outgoing`) or incoming edges.
    pub fn side(&self, dense: u32, outgoing: bool) -> impl Iterator<Item = (EdgeId, u32, Relation)> + '_ {
        let (off, edge, node, rel) = if outgoing {
            (&self.out_off, &self.out_edge, &self.out_node, &self.out_rel)
        } else {
            (&self.in_off, &self.in_edge, &self.in_node, &self.in_rel)
        };
        let (a, b) = range(off, dense);
        edge[a..b]
            .iter()
            .zip(&node[a..b])
            .zip(&rel[a..b])
            .map(|((&e, &n), &r)| (unpack(e), n, r))
    }

    /// `(edge, dense other end)` of a dense node's outgoing (`outgoing`) or
    /// incoming edges of relation `rel`.
    pub fn of_relation(&self, dense: u32, rel: Relation, outgoing: bool) -> impl Iterator<Item = (EdgeId, u32)> + '_ {
        self.side(dense, outgoing)
            .filter(move |&(_, _, r)| r == rel)
            .map(|(e, n, _)| (e, n))
    }

    /// Whether every edge listed, and both its ends, is visible at `now_us`
    /// (µs): from the build until the first listed row stops being visible.
    pub fn all_visible(&self, now_us: u64) -> bool {
        self.built_at.is_some_and(|b| b <= now_us) && now_us < self.horizon
    }

    /// Incoming `(edge, dense source)` of a dense node.
    pub fn inc(&self, dense: u32) -> impl Iterator<Item = (EdgeId, u32)> + '_ {
        let (a, b) = range(&self.in_off, dense);
        self.in_edge[a..b]
            .iter()
            .map(|&e| unpack(e))
            .zip(self.in_node[a..b].iter().copied())
    }

    /// Builds so far, from scratch and patched.
    pub fn builds(&self) -> Builds {
        self.builds
    }

    /// Whether both hold the same index (same numbering, same ranges in
    /// the same order), however each was built.
    pub fn same_index(&self, other: &Adjacency) -> bool {
        self.base == other.base
            && self.out_off == other.out_off
            && self.out_edge == other.out_edge
            && self.out_node == other.out_node
            && self.in_off == other.in_off
            && self.in_edge == other.in_edge
            && self.in_node == other.in_node
            && self.out_rel == other.out_rel
            && self.in_rel == other.in_rel
    }

    pub fn heap_bytes(&self) -> usize {
        self.base.capacity() * 4
            + (self.out_off.capacity() + self.in_off.capacity()) * 4
            + (self.out_edge.capacity() + self.in_edge.capacity()) * 4
            + (self.out_node.capacity() + self.in_node.capacity()) * 4
            + self.out_rel.capacity()
            + self.in_rel.capacity()
    }
}

/// Rows per edge shard the packed form can name (2^25, 4 billion edges in all).
pub const MAX_EDGE_ROWS: usize = 1 << 25;

/// An edge id in four bytes: 7 bits of edge shard, 25 bits of row.
#[inline]
pub fn pack(e: EdgeId) -> u32 {
    debug_assert!((e.row() as usize) < MAX_EDGE_ROWS);
    ((e.shard() as u32) << 25) | e.row()
}

#[inline]
pub fn unpack(p: u32) -> EdgeId {
    EdgeId::new((p >> 25) as usize, p & (MAX_EDGE_ROWS as u32 - 1))
}

fn range(off: &[u32], dense: u32) -> (usize, usize) {
    let i = dense as usize;
    match (off.get(i), off.get(i + 1)) {
        (Some(&a), Some(&b)) => (a as usize, b as usize),
        _ => (0, 0),
    }
}

/// Builds the CSR from `(packed edge, dense source, dense target, relation)`,
/// in runs (one an edge shard, read where they are rather than copied into
/// one list): both directions side by side, each on a core of its own.
pub fn build(base: Vec<u32>, edges: &[Vec<(u32, u32, u32, Relation)>]) -> Adjacency {
    let n = base.last().copied().unwrap_or(0) as usize;
    let ((out_off, out_edge, out_node, out_rel), (in_off, in_edge, in_node, in_rel)) = rayon::join(
        || build_side(n, edges, |&(e, s, d, rel)| (s, e, d, rel)),
        || build_side(n, edges, |&(e, s, d, rel)| (d, e, s, rel)),
    );
    Adjacency {
        base,
        out_off,
        out_edge,
        out_node,
        out_rel,
        in_off,
        in_edge,
        in_node,
        in_rel,
        ..Adjacency::default()
    }
}

/// One direction of [`build`]: `side` turns an edge into `(dense node it
/// is listed under, packed edge, dense other end, relation)`.
fn build_side(
    n: usize,
    edges: &[Vec<(u32, u32, u32, Relation)>],
    side: impl Fn(&(u32, u32, u32, Relation)) -> (u32, u32, u32, Relation),
) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<Relation>) {
    let mut off = vec![0u32; n + 1];
    for edge in edges.iter().flatten() {
        off[side(edge).0 as usize + 1] += 1;
    }
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let m = edges.iter().map(Vec::len).sum();
    let (mut edge, mut node, mut rel) = (vec![0u32; m], vec![0u32; m], vec![Relation::Contains; m]);
    let mut fill = off.clone();
    for e in edges.iter().flatten() {
        let (at, packed, other, r) = side(e);
        let f = &mut fill[at as usize];
        edge[*f as usize] = packed;
        node[*f as usize] = other;
        rel[*f as usize] = r;
        *f += 1;
    }
    (off, edge, node, rel)
}

/// In a [`Change`], the edge is not visible now.
pub const GONE: u32 = u32::MAX;

/// A touched edge seen from one endpoint: `(dense endpoint, packed edge,
/// dense other endpoint or GONE, relation)`, in the new numbering.
pub type Change = (u32, u32, u32, Relation);

/// Patches `old` into the index over `base` (every node shard as long as
/// in `old` or longer): each edge named in `out` and `inc` leaves the range
/// of its endpoint and comes back when it has an other endpoint. No edge
/// may be named twice on one side.
pub fn patch(old: Adjacency, base: Vec<u32>, mut out: Vec<Change>, mut inc: Vec<Change>) -> Adjacency {
    if out.is_empty() && inc.is_empty() && old.base == base {
        return old;
    }
    let remap = Remap::new(&old.base, &base);
    let (out_side, in_side) = rayon::join(
        || {
            out.sort_unstable();
            patch_side(
                &old.base,
                &base,
                (&old.out_off, &old.out_edge, &old.out_node, &old.out_rel),
                &out,
                &remap,
            )
        },
        || {
            inc.sort_unstable();
            patch_side(
                &old.base,
                &base,
                (&old.in_off, &old.in_edge, &old.in_node, &old.in_rel),
                &inc,
                &remap,
            )
        },
    );
    let (out_off, out_edge, out_node, out_rel) = out_side;
    let (in_off, in_edge, in_node, in_rel) = in_side;
    Adjacency {
        base,
        out_off,
        out_edge,
        out_node,
        out_rel,
        in_off,
        in_edge,
        in_node,
        in_rel,
        ..old
    }
}

type Side = (Vec<u32>, Vec<u32>, Vec<u32>, Vec<Relation>);

/// One direction of [`patch`]; `changes` sorted.
fn patch_side(
    old_base: &[u32],
    base: &[u32],
    (off, edge, node, rel): (&[u32], &[u32], &[u32], &[Relation]),
    changes: &[Change],
    remap: &Remap,
) -> Side {
    let n = base.last().copied().unwrap_or(0) as usize;
    let added = changes.iter().filter(|c| c.2 != GONE).count();
    let mut o_off = Vec::with_capacity(n + 1);
    let mut o_edge = Vec::with_capacity(edge.len() + added);
    let mut o_node = Vec::with_capacity(edge.len() + added);
    let mut o_rel = Vec::with_capacity(edge.len() + added);
    let mut ci = 0;
    for s in 0..NODE_SHARDS {
        let (ob, ol) = (old_base[s], old_base[s + 1] - old_base[s]);
        let (nb, nl) = (base[s], base[s + 1] - base[s]);
        let mut row = 0;
        while row < nl {
            // The next row with changes, or the end of the shard.
            let next = changes.get(ci).map_or(nl, |c| (c.0 - nb).min(nl));
            // Rows that were there before: their ranges, as they were.
            let end = next.min(ol);
            if row < end {
                let (a, b) = (off[(ob + row) as usize], off[(ob + end) as usize]);
                let shift = (o_edge.len() as u32).wrapping_sub(a);
                o_off.extend(
                    off[(ob + row) as usize..(ob + end) as usize]
                        .iter()
                        .map(|&x| x.wrapping_add(shift)),
                );
                o_edge.extend_from_slice(&edge[a as usize..b as usize]);
                o_rel.extend_from_slice(&rel[a as usize..b as usize]);
                remap.extend(&mut o_node, &node[a as usize..b as usize]);
                row = end;
            }
            // New rows without edges.
            while row < next {
                o_off.push(o_edge.len() as u32);
                row += 1;
            }
            if row == nl {
                break;
            }
            // A row with changes: its old range merged with them by edge.
            let d = nb + row;
            let k = changes[ci..].iter().take_while(|c| c.0 == d).count();
            let mine = &changes[ci..ci + k];
            ci += k;
            let (a, b) = if row < ol {
                (off[(ob + row) as usize] as usize, off[(ob + row + 1) as usize] as usize)
            } else {
                (0, 0)
            };
            o_off.push(o_edge.len() as u32);
            let (mut i, mut j) = (a, 0);
            while i < b || j < mine.len() {
                if j == mine.len() || (i < b && edge[i] < mine[j].1) {
                    o_edge.push(edge[i]);
                    o_node.push(remap.get(node[i]));
                    o_rel.push(rel[i]);
                    i += 1;
                } else {
                    if i < b && edge[i] == mine[j].1 {
                        i += 1;
                    }
                    if mine[j].2 != GONE {
                        o_edge.push(mine[j].1);
                        o_node.push(mine[j].2);
                        o_rel.push(mine[j].3);
                    }
                    j += 1;
                }
            }
            row += 1;
        }
    }
    o_off.push(o_edge.len() as u32);
    debug_assert_eq!(ci, changes.len());
    (o_off, o_edge, o_node, o_rel)
}

/// Renumbers dense ids of an old numbering into a new one where node
/// shards may have grown: a table names the shard at the start of each
/// bucket of ids, and the shard of an id is at most a few steps on.
struct Remap<'a> {
    old: &'a [u32],
    new: &'a [u32],
    /// `None` when no shard moved.
    buckets: Option<(u32, Vec<u16>)>,
}

impl<'a> Remap<'a> {
    fn new(old: &'a [u32], new: &'a [u32]) -> Remap<'a> {
        let moved = old.iter().zip(new).any(|(a, b)| a != b);
        let buckets = moved.then(|| {
            let n = old.last().copied().unwrap_or(0);
            // About two buckets per shard.
            let shift = (32 - n.leading_zeros()).saturating_sub(9);
            let table = (0..=(n >> shift))
                .map(|b| (old.partition_point(|&x| x <= b << shift).saturating_sub(1)) as u16)
                .collect();
            (shift, table)
        });
        Remap { old, new, buckets }
    }

    #[inline]
    fn get(&self, v: u32) -> u32 {
        match &self.buckets {
            None => v,
            Some((shift, table)) => {
                let mut s = table[(v >> shift) as usize] as usize;
                while self.old[s + 1] <= v {
                    s += 1;
                }
                v - self.old[s] + self.new[s]
            }
        }
    }

    fn extend(&self, out: &mut Vec<u32>, from: &[u32]) {
        match self.buckets {
            None => out.extend_from_slice(from),
            Some(_) => out.extend(from.iter().map(|&v| self.get(v))),
        }
    }
}

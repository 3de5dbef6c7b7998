//! Compressed sparse row adjacency over the visible edges, rebuilt after each
//! scan. Nodes are numbered densely: shard by shard, row by row.

use crate::ids::{EdgeId, NodeId};

#[derive(Default)]
pub struct Adjacency {
    /// `base[s]` is the dense index of row 0 of node shard `s`; `base[256]` is the total.
    pub(crate) base: Vec<u32>,
    pub(crate) out_off: Vec<u32>,
    /// Edges packed as `shard << 25 | row` (see [`pack`]).
    pub(crate) out_edge: Vec<u32>,
    pub(crate) out_node: Vec<u32>,
    pub(crate) in_off: Vec<u32>,
    pub(crate) in_edge: Vec<u32>,
    pub(crate) in_node: Vec<u32>,
}

impl Adjacency {
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

    /// Outgoing `(edge, dense target)` of a dense node.
    pub fn out(&self, dense: u32) -> impl Iterator<Item = (EdgeId, u32)> + '_ {
        let (a, b) = range(&self.out_off, dense);
        self.out_edge[a..b]
            .iter()
            .map(|&e| unpack(e))
            .zip(self.out_node[a..b].iter().copied())
    }

    /// Incoming `(edge, dense source)` of a dense node.
    pub fn inc(&self, dense: u32) -> impl Iterator<Item = (EdgeId, u32)> + '_ {
        let (a, b) = range(&self.in_off, dense);
        self.in_edge[a..b]
            .iter()
            .map(|&e| unpack(e))
            .zip(self.in_node[a..b].iter().copied())
    }

    pub fn heap_bytes(&self) -> usize {
        self.base.capacity() * 4
            + (self.out_off.capacity() + self.in_off.capacity()) * 4
            + (self.out_edge.capacity() + self.in_edge.capacity()) * 4
            + (self.out_node.capacity() + self.in_node.capacity()) * 4
    }
}

/// Rows per edge shard the packed form can name (2^25, 4 billion edges in all).
pub(crate) const MAX_EDGE_ROWS: usize = 1 << 25;

/// An edge id in four bytes: 7 bits of edge shard, 25 bits of row.
#[inline]
fn pack(e: EdgeId) -> u32 {
    debug_assert!((e.row() as usize) < MAX_EDGE_ROWS);
    ((e.shard() as u32) << 25) | e.row()
}

#[inline]
pub(crate) fn unpack(p: u32) -> EdgeId {
    EdgeId::new((p >> 25) as usize, p & (MAX_EDGE_ROWS as u32 - 1))
}

fn range(off: &[u32], dense: u32) -> (usize, usize) {
    let i = dense as usize;
    match (off.get(i), off.get(i + 1)) {
        (Some(&a), Some(&b)) => (a as usize, b as usize),
        _ => (0, 0),
    }
}

/// Builds the CSR from `(edge, dense source, dense target)` triples.
pub(crate) fn build(base: Vec<u32>, edges: &[(EdgeId, u32, u32)]) -> Adjacency {
    let n = base.last().copied().unwrap_or(0) as usize;
    let mut out_off = vec![0u32; n + 1];
    let mut in_off = vec![0u32; n + 1];
    for &(_, s, d) in edges {
        out_off[s as usize + 1] += 1;
        in_off[d as usize + 1] += 1;
    }
    for i in 0..n {
        out_off[i + 1] += out_off[i];
        in_off[i + 1] += in_off[i];
    }
    let m = edges.len();
    let mut out_edge = vec![0u32; m];
    let mut out_node = vec![0u32; m];
    let mut in_edge = vec![0u32; m];
    let mut in_node = vec![0u32; m];
    let mut out_fill = out_off.clone();
    let mut in_fill = in_off.clone();
    for &(e, s, d) in edges {
        let o = &mut out_fill[s as usize];
        out_edge[*o as usize] = pack(e);
        out_node[*o as usize] = d;
        *o += 1;
        let i = &mut in_fill[d as usize];
        in_edge[*i as usize] = pack(e);
        in_node[*i as usize] = s;
        *i += 1;
    }
    Adjacency {
        base,
        out_off,
        out_edge,
        out_node,
        in_off,
        in_edge,
        in_node,
    }
}

//! The columnar graph: 256 node shards and 128 edge shards.
//!
//! A node lives in shard `hash(key) % 256`; an edge lives in the edge shard
//! of its source node (`node shard % 128`). Deletion sets `valid_to` and the
//! visibility rule of SPEC 3.3 hides the row; rows move only when
//! [`Graph::compact`] drops retired ones, renumbering each shard it touches
//! under the shard's next generation.

pub mod adjacency;
pub mod batch;
pub mod col;
mod coverage;
pub mod mem;
pub mod schema;
pub mod shard;
mod staging;
mod upsert;
mod view;

use std::sync::Arc;

use rayon::prelude::*;

use crate::crn::Crn;
use crate::ids::{EDGE_SHARDS, EdgeId, NODE_SHARDS, NodeId, NodeSlot, Sym};
use crate::intern::Interner;
use crate::props::Props;
use crate::relation::Relation;
use adjacency::Change;
pub use adjacency::{Adjacency, Builds};
use batch::key_hash;
pub use batch::{
    Adjust, BatchEdgeRef, BatchNodeRef, EdgeBatch, FoundNode, IndexedEdgeRef, NodeBatch, NodeInput, NodeKeyRef,
    SharedProps, Span,
};
pub use col::{Backing, Col, ColError, Plain};
pub use coverage::{Coverage, Hole};
pub use mem::{At, BitSet, Prefetch, prefetch_ahead, source_fingerprint};
pub use schema::{EdgeFields, EdgeVersion, NodeFields, NodeRow, Phase, Reachability};
pub use shard::{EdgeShard, NodeShard, Sift, Verdict, visible};
pub use staging::NodeStage;
pub use upsert::{IngestStats, Upsert};
pub use view::{EdgeRef, NodeRef};

/// Aggregates over the visible graph (SPEC 4.2 `graph/stats`).
#[derive(Clone, Default, Debug, PartialEq)]
pub struct GraphStats {
    pub total_nodes: u64,
    pub active_nodes: u64,
    pub logically_deleted: u64,
    pub total_edges: u64,
    pub waste_nodes: u64,
    pub total_cost_usd_mo: f64,
    pub projected_savings_usd_mo: f64,
    /// Active nodes per provider, sorted by provider symbol.
    pub providers: Vec<(Sym, u64)>,
}

/// One changed node, as written to the temporal store.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeVersion {
    pub crn: String,
    pub row: NodeRow,
}

/// Node and edge rows changed between two calls of [`Graph::take_row_changes`].
#[derive(Clone, Debug, Default)]
pub struct RowChanges {
    /// By node shard: the rows inserted, changed, revived, retired or
    /// loaded, repeats allowed; `None` where too many changed to list.
    pub nodes: Vec<Option<Vec<u32>>>,
    /// By edge shard, the same for edge rows.
    pub edges: Vec<Option<Vec<u32>>>,
    /// From this time (µs) a row's visibility may change without a write.
    pub horizon: u64,
}

/// An edge the engine inferred, between nodes already in the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct InferredEdge {
    pub src: NodeId,
    pub dst: NodeId,
    pub rel: Relation,
    /// Encoded properties ([`crate::props::PropWriter`]); they name the
    /// rule or source that inferred the edge.
    pub props: Vec<u8>,
}

/// What changed since the last commit.
#[derive(Default, Debug)]
pub struct Changes {
    pub nodes: Vec<NodeVersion>,
    pub edges: Vec<EdgeVersion>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty()
    }
}

/// What [`Graph::compact`] did.
#[derive(Clone, Debug, Default)]
pub struct Compaction {
    /// By node shard: for a compacted one (its generation moved on), the
    /// old row number of each new row, in order; `None` for a shard left
    /// as it was.
    pub kept: Vec<Option<Vec<u32>>>,
    pub nodes_dropped: usize,
    pub edges_dropped: usize,
}

impl Compaction {
    /// Whether any row was dropped (and so any node id renamed).
    pub fn is_empty(&self) -> bool {
        self.nodes_dropped == 0 && self.edges_dropped == 0
    }
}

/// Retired rows a compaction waits for: an eighth of the graph's node
/// rows, and at least this many.
pub const COMPACT_MIN_ROWS: usize = 4096;

/// Node rows up to which a start compacts every retired row: below it the
/// copy costs a small part of the start (under ~0.3 s at 1M rows); above
/// it a start compacts only when a scan would ([`Graph::compaction_due`]),
/// since compacting copies every shard it touches out of the mapped
/// snapshot (seconds at 10M rows for a few percent of them).
pub const START_COMPACT_ALL_ROWS: usize = 1 << 20;

/// `(shard, row)` pairs.
pub type RowRefs = Vec<(u32, u32)>;

/// The node and edge rows changed since they were last taken, by shard:
/// the versions a commit writes, read from the graph as they are encoded.
#[derive(Clone, Debug, Default)]
pub struct DirtyRows {
    pub nodes: Vec<Vec<u32>>,
    pub edges: Vec<Vec<u32>>,
}

impl DirtyRows {
    /// `(shard, row)` of every node row that `graph` has, in shard order,
    /// then of every edge row: rows are only ever appended, so a row past
    /// its shard's end cannot be named, and is skipped if it is.
    pub fn flat(&self, graph: &Graph) -> (RowRefs, RowRefs) {
        fn flat(rows: &[Vec<u32>], len: impl Fn(usize) -> usize) -> Vec<(u32, u32)> {
            let mut out = Vec::with_capacity(rows.iter().map(Vec::len).sum());
            for (s, rows) in rows.iter().enumerate() {
                let n = len(s);
                out.extend(rows.iter().filter(|&&r| (r as usize) < n).map(|&r| (s as u32, r)));
            }
            out
        }
        (
            flat(&self.nodes, |s| graph.nodes.get(s).map_or(0, NodeShard::len)),
            flat(&self.edges, |s| graph.edges.get(s).map_or(0, EdgeShard::len)),
        )
    }

    /// Node and edge rows.
    pub fn counts(&self) -> (usize, usize) {
        let sum = |rows: &[Vec<u32>]| rows.iter().map(Vec::len).sum();
        (sum(&self.nodes), sum(&self.edges))
    }

    pub fn is_empty(&self) -> bool {
        self.counts() == (0, 0)
    }
}

pub struct Graph {
    interner: Arc<Interner>,
    pub nodes: Vec<NodeShard>,
    pub edges: Vec<EdgeShard>,
    adj: Adjacency,
    generation: u64,
}

#[inline]
fn node_shard_of(hash: u64) -> usize {
    (hash % NODE_SHARDS as u64) as usize
}

#[inline]
fn edge_shard_of(src: NodeId) -> usize {
    src.shard() % EDGE_SHARDS
}

/// How many of `rows` node or edge rows may have changed for the adjacency
/// index to be patched rather than built again: an eighth, and on a small
/// graph a few hundred, where either takes microseconds.
fn patch_limit(rows: usize) -> usize {
    (rows / 8).max(256)
}

/// When a row with this `valid_to` stops being visible, if later than `now_us`.
#[inline]
fn expiry(valid_to: u64, now_us: u64) -> u64 {
    if valid_to > now_us { valid_to } else { u64::MAX }
}

/// An edge row is visible when it and both its endpoints are (SPEC 3.3).
fn edge_row_visible(nodes: &[NodeShard], shard: &EdgeShard, r: usize, now_us: u64) -> bool {
    let (a, b) = (shard.src[r], shard.dst[r]);
    visible(shard.valid_to[r], now_us)
        && visible(nodes[a.shard()].valid_to[a.row() as usize], now_us)
        && visible(nodes[b.shard()].valid_to[b.row() as usize], now_us)
}

/// The rows of one batch grouped by the shard they belong to: computed as
/// the batch arrives, so applying it later only walks each shard's rows.
#[derive(Clone, Debug, Default)]
pub struct Staged {
    off: Vec<u32>,
    perm: Vec<u32>,
}

impl Staged {
    /// Groups a node batch by owning node shard (hash mod 256).
    pub fn nodes(b: &NodeBatch) -> Staged {
        let (off, perm) = partition(NODE_SHARDS, b.rows.iter().map(|r| node_shard_of(r.hash)));
        Staged { off, perm }
    }

    /// Groups an edge batch by the edge shard of its source node, known
    /// from the source's key before the node itself is resolved.
    pub fn edges(b: &EdgeBatch) -> Staged {
        let (off, perm) = partition(
            EDGE_SHARDS,
            b.rows
                .iter()
                .map(|e| node_shard_of(b.keys[e.src as usize].hash) % EDGE_SHARDS),
        );
        Staged { off, perm }
    }

    /// Rows staged for `shard`.
    pub fn rows_in(&self, shard: usize) -> usize {
        match (self.off.get(shard), self.off.get(shard + 1)) {
            (Some(a), Some(b)) => (b - a) as usize,
            _ => 0,
        }
    }
}

/// The node of every distinct endpoint of `batches`, by batch and key
/// (`None` when no node has its key), resolved in order of the owning node
/// shard, so each shard's index and ids are read together instead of at
/// random.
fn resolve_keys(batches: &[EdgeBatch], nodes: &[NodeShard]) -> Vec<Vec<ResolvedId>> {
    let total: usize = batches.iter().map(|b| b.keys.len()).sum();
    let mut off = vec![0u32; NODE_SHARDS + 1];
    for b in batches {
        for k in &b.keys {
            off[node_shard_of(k.hash) + 1] += 1;
        }
    }
    for i in 0..NODE_SHARDS {
        off[i + 1] += off[i];
    }
    let mut refs = vec![(0u32, 0u32); total];
    for (bi, b) in batches.iter().enumerate() {
        for (i, k) in b.keys.iter().enumerate() {
            let slot = &mut off[node_shard_of(k.hash)];
            refs[*slot as usize] = (bi as u32, i as u32);
            *slot += 1;
        }
    }
    let found: Vec<ResolvedId> = refs
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            // First every key's row by hash and segments, each row's id
            // asked for as it is found...
            let rows: Vec<Option<u32>> = chunk
                .iter()
                .enumerate()
                .map(|(j, &(bi, i))| {
                    // The keys are scattered over the batches: the next
                    // ones' are asked for while one is looked up.
                    prefetch_ahead(chunk, j, 16, |(bi, i), stage| {
                        batches[bi as usize].prefetch_key(i as usize, stage);
                    });
                    let k = &batches[bi as usize].keys[i as usize];
                    nodes[node_shard_of(k.hash)].find_start(k.hash, &k.syms)
                })
                .collect();
            // ...then the ids compared, their bytes loaded meanwhile.
            chunk.iter().zip(rows).map(|(&(bi, i), row)| {
                let b = &batches[bi as usize];
                let k = &b.keys[i as usize];
                let s = node_shard_of(k.hash);
                let shard = &nodes[s];
                let row = shard.find_end(row, k.hash, &k.syms, k.id.get(&b.buf));
                ResolvedId::of(row.map(|row| NodeId::new(s, row, shard.generation)))
            })
        })
        .collect();
    let mut out: Vec<Vec<ResolvedId>> = batches.iter().map(|b| vec![ResolvedId::NONE; b.keys.len()]).collect();
    for (&(bi, i), id) in refs.iter().zip(found) {
        out[bi as usize][i as usize] = id;
    }
    out
}

/// A resolved node id in 8 bytes; all ones when unresolved (that would be
/// row 2^32 - 1 of a shard, which no shard reaches).
#[derive(Copy, Clone, PartialEq, Eq)]
struct ResolvedId(u64);

impl ResolvedId {
    const NONE: ResolvedId = ResolvedId(u64::MAX);

    fn of(id: Option<NodeId>) -> ResolvedId {
        id.map_or(ResolvedId::NONE, |id| ResolvedId(id.to_raw()))
    }

    fn get(self) -> Option<u64> {
        (self != ResolvedId::NONE).then_some(self.0)
    }
}

/// Counting sort of row indices by shard: `(offsets[shards + 1], permutation)`.
fn partition(shards: usize, keys: impl Iterator<Item = usize> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut off = vec![0u32; shards + 1];
    for k in keys.clone() {
        off[k + 1] += 1;
    }
    for i in 0..shards {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut perm = vec![0u32; off[shards] as usize];
    for (i, k) in keys.enumerate() {
        perm[fill[k] as usize] = i as u32;
        fill[k] += 1;
    }
    (off, perm)
}

/// Upserts the rows of shard `s` found in `batches` (`parts[i]` is the
/// `off` and `perm` of [`Staged::nodes`] of `batches[i]`).
fn upsert_shard_rows(
    shard: &mut NodeShard,
    s: usize,
    batches: &[NodeBatch],
    parts: &[(&[u32], &[u32])],
    now_us: u64,
    scan: u32,
) -> IngestStats {
    let mut st = IngestStats::default();
    // Every row of a first ingest is copied in; most of a later one's are
    // found unchanged.
    let fresh = shard.is_empty();
    if fresh {
        // A first ingest: size every column once.
        shard.reserve_for(batches.iter().zip(parts).flat_map(|(b, (off, perm))| {
            perm[off[s] as usize..off[s + 1] as usize]
                .iter()
                .map(|&i| &b.rows[i as usize])
        }));
    }
    for (b, (off, perm)) in batches.iter().zip(parts) {
        // A shard's rows are scattered over each batch: what the next ones
        // read is asked for while one is written.
        let mine = &perm[off[s] as usize..off[s + 1] as usize];
        for (j, &i) in mine.iter().enumerate() {
            prefetch_ahead(mine, j, 16, |next, stage| b.prefetch(next as usize, stage, fresh));
            let (_, outcome) = shard.upsert(&b.rows[i as usize], &b.buf, now_us, scan);
            st.add(outcome);
        }
    }
    st
}

impl Graph {
    pub fn new(interner: Arc<Interner>) -> Graph {
        Graph {
            interner,
            nodes: (0..NODE_SHARDS).map(|_| NodeShard::default()).collect(),
            edges: (0..EDGE_SHARDS).map(|_| EdgeShard::default()).collect(),
            adj: Adjacency::default(),
            generation: 0,
        }
    }

    /// A graph from shards loaded elsewhere (a snapshot); the adjacency
    /// index still has to be rebuilt.
    pub fn from_shards(
        interner: Arc<Interner>,
        nodes: Vec<NodeShard>,
        edges: Vec<EdgeShard>,
        generation: u64,
    ) -> Graph {
        debug_assert_eq!((nodes.len(), edges.len()), (NODE_SHARDS, EDGE_SHARDS));
        Graph {
            interner,
            nodes,
            edges,
            adj: Adjacency::default(),
            generation,
        }
    }

    pub fn interner(&self) -> &Arc<Interner> {
        &self.interner
    }

    /// The graph generation: bumped by every committed change.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn set_generation(&mut self, generation: u64) {
        self.generation = generation;
    }

    /// The id an edge row's endpoint `slot` names: its node shard's generation added.
    #[inline]
    pub fn node_id(&self, slot: NodeSlot) -> NodeId {
        slot.id(self.nodes[slot.shard()].generation)
    }

    pub fn node_shards(&self) -> &[NodeShard] {
        &self.nodes
    }

    /// The node shard a key hashed to `hash` belongs to.
    pub fn node_shard_of(hash: u64) -> usize {
        node_shard_of(hash)
    }

    pub fn edge_shards(&self) -> &[EdgeShard] {
        &self.edges
    }

    pub fn adjacency(&self) -> &Adjacency {
        &self.adj
    }

    /// Rows in the graph, visible or not.
    pub fn node_rows(&self) -> usize {
        self.nodes.iter().map(NodeShard::len).sum()
    }

    pub fn edge_rows(&self) -> usize {
        self.edges.iter().map(EdgeShard::len).sum()
    }

    /// Upserts every node of `batches`, shard by shard in parallel.
    pub fn ingest_nodes(&mut self, batches: &[NodeBatch], now_us: u64, scan: u32) -> IngestStats {
        let found = self.seen_found(batches, scan);
        let staged: Vec<Staged> = batches.par_iter().map(Staged::nodes).collect();
        let mut stats = self.ingest_staged_nodes(batches, &staged, now_us, scan);
        stats.unchanged += found;
        stats
    }

    /// Marks the rows of the batches' nodes found unchanged
    /// ([`NodeBatch::found`]) seen by `scan`; returns how many there were.
    fn seen_found(&mut self, batches: &[NodeBatch], scan: u32) -> usize {
        let mut found = 0;
        for f in batches.iter().flat_map(|b| &b.found) {
            if let Some(shard) = self.nodes.get_mut(usize::from(f.shard)) {
                shard.seen_unchanged(&[f.row], scan);
                found += 1;
            }
        }
        found
    }

    /// [`Graph::ingest_nodes`] for batches already split by owning shard
    /// (`staged[i]` is [`Staged::nodes`] of `batches[i]`). A scan stages
    /// its nodes by shard as they arrive instead ([`NodeStage`]).
    fn ingest_staged_nodes(&mut self, batches: &[NodeBatch], staged: &[Staged], now_us: u64, scan: u32) -> IngestStats {
        let parts: Vec<(&[u32], &[u32])> = staged.iter().map(|s| (&s.off[..], &s.perm[..])).collect();
        self.nodes
            .par_iter_mut()
            .enumerate()
            .map(|(s, shard)| upsert_shard_rows(shard, s, batches, &parts, now_us, scan))
            .reduce(IngestStats::default, IngestStats::merge)
    }

    /// Resolves both endpoints of every edge and upserts it into the edge
    /// shard of its source. Edges with an unknown endpoint are counted as
    /// dangling and dropped.
    pub fn ingest_edges(&mut self, batches: &[EdgeBatch], now_us: u64, scan: u32) -> IngestStats {
        let staged: Vec<Staged> = batches.par_iter().map(Staged::edges).collect();
        self.ingest_staged_edges(batches, &staged, now_us, scan)
    }

    /// [`Graph::ingest_edges`] for batches already split by the edge shard
    /// their source node will land in (`staged[i]` is [`Staged::edges`] of
    /// `batches[i]`). Endpoints are resolved against the node shards, so
    /// call this after every node of the scan is in.
    pub fn ingest_staged_edges(
        &mut self,
        batches: &[EdgeBatch],
        staged: &[Staged],
        now_us: u64,
        scan: u32,
    ) -> IngestStats {
        // Each distinct endpoint of a batch is resolved once, before the
        // edges are applied, grouped by the node shard that owns it.
        let ids = resolve_keys(batches, &self.nodes);
        self.edges
            .par_iter_mut()
            .enumerate()
            .map(|(s, shard)| {
                let mut st = IngestStats::default();
                if shard.is_empty() {
                    // A first ingest: size every column once.
                    let (mut rows, mut bytes) = (0usize, 0usize);
                    for (b, part) in batches.iter().zip(staged) {
                        // Room for the properties each batch names once: a
                        // batch's edges with the same ones share a span (a
                        // direct-mapped table of spans finds most), and the
                        // shard keeps them once (`held` below), across
                        // batches too, so this is an upper bound.
                        let mut seen = [Span::default(); 32];
                        for &i in &part.perm[part.off[s] as usize..part.off[s + 1] as usize] {
                            rows += 1;
                            let props = b.rows[i as usize].props;
                            let place = &mut seen[(props.off.wrapping_mul(0x9E37_79B1) >> 27) as usize];
                            if *place != props {
                                bytes += props.len as usize;
                                *place = props;
                            }
                        }
                    }
                    shard.reserve(rows, bytes);
                }
                // Edges with the same properties (a relation string,
                // mostly) keep one copy of them.
                let mut held = shard::HeldProps::default();
                for ((b, part), ids) in batches.iter().zip(staged).zip(&ids) {
                    let mine = &part.perm[part.off[s] as usize..part.off[s + 1] as usize];
                    for (j, &i) in mine.iter().enumerate() {
                        prefetch_ahead(mine, j, 16, |next, stage| b.prefetch(next as usize, stage, ids));
                        let e = &b.rows[i as usize];
                        let end = |k: u32| ids[k as usize].get().map(NodeId::from_raw);
                        match (end(e.src), end(e.dst)) {
                            (Some(src), Some(dst)) => {
                                let props = e.props.get(&b.buf);
                                let u = shard.upsert(src, dst, e.rel, e.inferred, props, &mut held, now_us, scan, None);
                                st.add(u);
                            }
                            _ => st.dangling += 1,
                        }
                    }
                }
                st
            })
            .reduce(IngestStats::default, IngestStats::merge)
    }

    /// Logically deletes, at `now_us`, the nodes and edges of `providers` that
    /// scan `scan` did not report, and the edges whose endpoint is gone.
    /// Providers whose scan failed must not be listed. Returns `(nodes, edges)` retired.
    pub fn retire_unseen(&mut self, providers: &[Sym], now_us: u64, scan: u32) -> (usize, usize) {
        self.retire_uncovered(&Coverage::of(providers), now_us, scan)
    }

    /// Logically deletes, at `now_us`, the nodes that `coverage` answers for
    /// and scan `scan` did not report, the edges of those providers it did
    /// not report unless an end is in one of the coverage's holes (an edge
    /// to a resource not listed is not sent, yet may stand), and the edges
    /// whose endpoint is gone. Returns `(nodes, edges)` retired.
    pub fn retire_uncovered(&mut self, coverage: &Coverage, now_us: u64, scan: u32) -> (usize, usize) {
        let nodes_retired: usize = self
            .nodes
            .par_iter_mut()
            .map(|shard| {
                let mut n = 0;
                for r in 0..shard.len() {
                    if shard.valid_to[r] == 0 && shard.seen[r] != scan && coverage.covers(&shard.key[r]) {
                        n += usize::from(shard.retire(r as u32, now_us));
                    }
                }
                n
            })
            .sum();
        let nodes = &self.nodes;
        let holes = !coverage.holes().is_empty();
        let edges_retired: usize = self
            .edges
            .par_iter_mut()
            .map(|shard| {
                let mut n = 0;
                for r in 0..shard.len() {
                    if shard.valid_to[r] != 0 {
                        continue;
                    }
                    let (src, dst) = (shard.src[r], shard.dst[r]);
                    let (src_row, dst_row) = (&nodes[src.shard()], &nodes[dst.shard()]);
                    let (s, d) = (src.row() as usize, dst.row() as usize);
                    let gone = src_row.valid_to[s] != 0 || dst_row.valid_to[d] != 0;
                    // An inferred edge is not a provider's to report: whoever
                    // inferred it retires it ([`Graph::retire_inferred`]).
                    let unseen = !shard.inferred.get(r)
                        && shard.seen[r] != scan
                        && coverage.covers_provider(src_row.key[s][0])
                        && !(holes && (coverage.in_hole(&src_row.key[s]) || coverage.in_hole(&dst_row.key[d])));
                    if gone || unseen {
                        n += usize::from(shard.retire(r as u32, now_us));
                    }
                }
                n
            })
            .sum();
        (nodes_retired, edges_retired)
    }

    /// Adds or refreshes edges the engine inferred (the linker's matches,
    /// observed traffic), marked `inferred` and seen in `scan`. An edge a
    /// provider reported between the same nodes with the same relation
    /// stays as reported. Edges naming a node not in the graph are dangling.
    pub fn upsert_inferred_edges(&mut self, edges: &[InferredEdge], now_us: u64, scan: u32) -> IngestStats {
        let mut by_shard: Vec<Vec<&InferredEdge>> = (0..EDGE_SHARDS).map(|_| Vec::new()).collect();
        let mut dangling = 0;
        for e in edges {
            if self.node_row_ok(e.src) && self.node_row_ok(e.dst) {
                by_shard[edge_shard_of(e.src)].push(e);
            } else {
                dangling += 1;
            }
        }
        let mut stats = self
            .edges
            .par_iter_mut()
            .zip(by_shard)
            .map(|(shard, list)| {
                let mut st = IngestStats::default();
                let mut held = shard::HeldProps::default();
                for e in list {
                    let reported = shard
                        .find(e.src, e.dst, e.rel)
                        .is_some_and(|r| !shard.inferred.get(r as usize) && shard.valid_to[r as usize] == 0);
                    if reported {
                        st.unchanged += 1;
                        continue;
                    }
                    st.add(shard.upsert(e.src, e.dst, e.rel, true, &e.props, &mut held, now_us, scan, None));
                }
                st
            })
            .reduce(IngestStats::default, IngestStats::merge);
        stats.dangling += dangling;
        stats
    }

    /// Logically deletes, at `now_us`, the visible inferred edges that
    /// `owned` claims (by their properties) and that were not refreshed in
    /// `scan`. Returns how many.
    pub fn retire_inferred<F>(&mut self, scan: u32, now_us: u64, owned: F) -> usize
    where
        F: Fn(Props<'_>) -> bool + Sync,
    {
        self.edges
            .par_iter_mut()
            .map(|shard| {
                let mut n = 0;
                for r in 0..shard.len() {
                    if shard.valid_to[r] == 0
                        && shard.inferred.get(r)
                        && shard.seen[r] != scan
                        && owned(Props::new(shard.props[r].get(&shard.arena)))
                    {
                        n += usize::from(shard.retire(r as u32, now_us));
                    }
                }
                n
            })
            .sum()
    }

    /// Sets the reachability and removal risk of every node visible at
    /// `now_us`, shard by shard in parallel: `assess(id)` for each. Returns
    /// how many rows changed.
    pub fn apply_assessment<F>(&mut self, now_us: u64, assess: F) -> usize
    where
        F: Fn(NodeId) -> (Reachability, f32) + Sync,
    {
        self.nodes
            .par_iter_mut()
            .enumerate()
            .map(|(s, shard)| {
                let mut changed = 0;
                for r in 0..shard.len() {
                    if !visible(shard.valid_to[r], now_us) {
                        continue;
                    }
                    let (reach, risk) = assess(NodeId::new(s, r as u32, shard.generation));
                    changed += usize::from(shard.set_assessment(r as u32, reach, risk, now_us));
                }
                changed
            })
            .sum()
    }

    /// Sets the remediation stage of every node visible at `now_us`: its
    /// stage in `stages` (node and stage; sorted here by shard and row, so
    /// each shard reads its own run in row order), or no stage. An id of
    /// another generation names no row. Returns how many rows changed.
    pub fn apply_phases(&mut self, now_us: u64, stages: &mut [(NodeId, Phase)]) -> usize {
        stages.par_sort_unstable_by_key(|(id, _)| (id.shard(), id.row()));
        let stages = &*stages;
        self.nodes
            .par_iter_mut()
            .enumerate()
            .map(|(s, shard)| {
                let lo = stages.partition_point(|(id, _)| id.shard() < s);
                let hi = stages.partition_point(|(id, _)| id.shard() <= s);
                let generation = shard.generation;
                let mut mine = stages[lo..hi]
                    .iter()
                    .filter(|(id, _)| id.generation() == generation)
                    .peekable();
                let mut changed = 0;
                for r in 0..shard.len() {
                    let mut phase = Phase::None;
                    while let Some((id, p)) = mine.peek() {
                        match (id.row() as usize).cmp(&r) {
                            std::cmp::Ordering::Less => {
                                mine.next();
                            }
                            std::cmp::Ordering::Equal => {
                                phase = *p;
                                break;
                            }
                            std::cmp::Ordering::Greater => break,
                        }
                    }
                    if visible(shard.valid_to[r], now_us) {
                        changed += usize::from(shard.set_phase(r as u32, phase, now_us));
                    }
                }
                changed
            })
            .sum()
    }

    /// The edge `src -rel-> dst`, visible or not.
    pub fn find_edge(&self, src: NodeId, dst: NodeId, rel: Relation) -> Option<EdgeId> {
        let s = edge_shard_of(src);
        self.edges.get(s)?.find(src, dst, rel).map(|r| EdgeId::new(s, r))
    }

    /// Whether a provider reports a visible edge `src -rel-> dst` (one the
    /// engine did not infer).
    pub fn is_reported_edge(&self, src: NodeId, dst: NodeId, rel: Relation) -> bool {
        let shard = &self.edges[edge_shard_of(src)];
        shard
            .find(src, dst, rel)
            .is_some_and(|r| !shard.inferred.get(r as usize) && shard.valid_to[r as usize] == 0)
    }

    fn node_row_ok(&self, id: NodeId) -> bool {
        self.nodes
            .get(id.shard())
            .is_some_and(|s| (id.row() as usize) < s.len() && s.generation == id.generation())
    }

    /// Rebuilds the adjacency index over the edges visible at `now_us`:
    /// patches the last one when few rows changed since it was built
    /// (`adjacency::patch`), builds it from scratch otherwise.
    pub fn rebuild_adjacency(&mut self, now_us: u64) {
        let base = self.dense_base();
        let mut builds = self.adj.builds;
        let mut adj = match self.adjacency_changes(&base, now_us) {
            Some((out, inc, horizon)) => {
                builds.patched += 1;
                let old = std::mem::take(&mut self.adj);
                let mut adj = adjacency::patch(old, base, out, inc);
                adj.horizon = horizon;
                adj
            }
            None => {
                builds.full += 1;
                self.full_adjacency(base, now_us)
            }
        };
        adj.built_at = Some(now_us);
        adj.builds = builds;
        self.adj = adj;
        self.clear_touched();
    }

    /// Rebuilds the adjacency index over the edges visible at `now_us` from
    /// every edge row, whatever changed since the last build.
    pub fn rebuild_adjacency_from_scratch(&mut self, now_us: u64) {
        let mut builds = self.adj.builds;
        builds.full += 1;
        self.adj = self.full_adjacency(self.dense_base(), now_us);
        self.adj.built_at = Some(now_us);
        self.adj.builds = builds;
        self.clear_touched();
    }

    /// The node and edge rows inserted, changed, revived, retired or
    /// loaded since the last call, by shard (`None` where too many changed
    /// to list), and the time from which a row's visibility may change
    /// without a write (a stored future `valid_to`; `u64::MAX` when none).
    pub fn take_row_changes(&mut self) -> RowChanges {
        fn take(t: &mut shard::Touched) -> Option<Vec<u32>> {
            let rows = t.rows().map(<[u32]>::to_vec);
            t.clear();
            rows
        }
        RowChanges {
            nodes: self.nodes.iter_mut().map(|s| take(&mut s.changed)).collect(),
            edges: self.edges.iter_mut().map(|s| take(&mut s.changed)).collect(),
            horizon: self.adj.horizon,
        }
    }

    fn clear_touched(&mut self) {
        for s in &mut self.nodes {
            s.touched.clear();
        }
        for s in &mut self.edges {
            s.touched.clear();
        }
    }

    /// The dense index of row 0 of each node shard, then the node count.
    fn dense_base(&self) -> Vec<u32> {
        let mut base = Vec::with_capacity(NODE_SHARDS + 1);
        let mut total = 0u32;
        for s in &self.nodes {
            base.push(total);
            total += s.len() as u32;
        }
        base.push(total);
        base
    }

    /// The adjacency index over the edges visible at `now_us`, from every edge row.
    fn full_adjacency(&self, base: Vec<u32>, now_us: u64) -> Adjacency {
        let nodes = &self.nodes;
        let dense = |id: NodeSlot| base[id.shard()] + id.row();
        // Which nodes are visible, a bit each: 1.25 MB at ten million nodes,
        // held in cache while every edge asks about both its ends, where
        // their `valid_to` would be two reads from memory an edge.
        let live: Vec<BitSet> = nodes
            .par_iter()
            .map(|s| {
                let words = s.valid_to.chunks(64).map(|c| {
                    c.iter()
                        .enumerate()
                        .fold(0u64, |w, (i, &t)| w | (u64::from(visible(t, now_us)) << i))
                });
                BitSet::from_words(words.collect::<Vec<u64>>().into())
            })
            .collect();
        let is_live = |id: NodeSlot| live[id.shard()].get(id.row() as usize);
        let per_shard: Vec<Vec<(u32, u32, u32, Relation)>> = self
            .edges
            .par_iter()
            .enumerate()
            .map(|(s, shard)| {
                (0..shard.len())
                    .filter(|&r| visible(shard.valid_to[r], now_us) && is_live(shard.src[r]) && is_live(shard.dst[r]))
                    .map(|r| {
                        (
                            adjacency::pack(EdgeId::new(s, r as u32)),
                            dense(shard.src[r]),
                            dense(shard.dst[r]),
                            shard.rel[r],
                        )
                    })
                    .collect()
            })
            .collect();
        let mut adj = adjacency::build(base, &per_shard);
        // The first row, node or edge, to stop being visible after now.
        let first = |valid_to: &[u64]| valid_to.iter().map(|&t| expiry(t, now_us)).min().unwrap_or(u64::MAX);
        let nodes = nodes.par_iter().map(|s| first(&s.valid_to)).min();
        let edges = self.edges.par_iter().map(|s| first(&s.valid_to)).min();
        adj.horizon = nodes.into_iter().chain(edges).min().unwrap_or(u64::MAX);
        adj
    }

    /// What patching the adjacency index into the one over `base` at
    /// `now_us` takes: the touched edges seen from their sources and from
    /// their targets, and the new horizon. `None` when a full build is
    /// needed: never built, time went back or past the horizon, a shard
    /// shrank (shards replaced), or too much changed.
    fn adjacency_changes(&self, base: &[u32], now_us: u64) -> Option<(Vec<Change>, Vec<Change>, u64)> {
        let old = &self.adj;
        let built_at = old.built_at?;
        if now_us < built_at || now_us >= old.horizon || old.base.len() != base.len() {
            return None;
        }
        if old
            .base
            .windows(2)
            .zip(base.windows(2))
            .any(|(o, n)| n[1] - n[0] < o[1] - o[0])
        {
            return None;
        }
        if self.edges.iter().any(|s| s.touched.rows().is_none()) {
            return None;
        }
        let n = base[NODE_SHARDS];
        let appended = n - old.base[NODE_SHARDS];
        let dense = |id: NodeSlot| base[id.shard()] + id.row();
        // Nodes retired, revived or loaded: each of their edges is touched.
        let mut marked: Option<BitSet> = None;
        let (mut node_rows, mut horizon) = (0u32, old.horizon);
        for (s, shard) in self.nodes.iter().enumerate() {
            let rows = shard.touched.rows()?;
            if !rows.is_empty() {
                let m = marked.get_or_insert_with(|| BitSet::with_len(n as usize));
                for &r in rows {
                    m.set((base[s] + r) as usize, true);
                    horizon = horizon.min(expiry(shard.valid_to[r as usize], now_us));
                }
            }
            node_rows += rows.len() as u32;
            let was = old.base[s + 1] - old.base[s];
            for &t in &shard.valid_to[was as usize..] {
                horizon = horizon.min(expiry(t, now_us));
            }
        }
        if (node_rows + appended) as usize > patch_limit(n as usize) {
            return None;
        }
        let marked = marked.as_ref();
        let touched: Vec<Vec<u32>> = self
            .edges
            .par_iter()
            .map(|shard| {
                let mut rows = shard.touched.rows().map_or_else(Vec::new, <[u32]>::to_vec);
                if let Some(m) = marked {
                    for r in 0..shard.len() {
                        if m.get(dense(shard.src[r]) as usize) || m.get(dense(shard.dst[r]) as usize) {
                            rows.push(r as u32);
                        }
                    }
                }
                rows.sort_unstable();
                rows.dedup();
                rows
            })
            .collect();
        let count: usize = touched.iter().map(Vec::len).sum();
        if count > patch_limit(self.edge_rows()) {
            return None;
        }
        let nodes = &self.nodes;
        let per_shard: Vec<(Vec<Change>, Vec<Change>, u64)> = self
            .edges
            .par_iter()
            .zip(&touched)
            .enumerate()
            .map(|(s, (shard, rows))| {
                let (mut out, mut inc) = (Vec::with_capacity(rows.len()), Vec::with_capacity(rows.len()));
                let mut horizon = u64::MAX;
                for &r in rows {
                    let p = adjacency::pack(EdgeId::new(s, r));
                    let r = r as usize;
                    let (a, b) = (dense(shard.src[r]), dense(shard.dst[r]));
                    let shown = edge_row_visible(nodes, shard, r, now_us);
                    let rel = shard.rel[r];
                    out.push((a, p, if shown { b } else { adjacency::GONE }, rel));
                    inc.push((b, p, if shown { a } else { adjacency::GONE }, rel));
                    horizon = horizon.min(expiry(shard.valid_to[r], now_us));
                }
                (out, inc, horizon)
            })
            .collect();
        let mut out = Vec::with_capacity(count);
        let mut inc = Vec::with_capacity(count);
        for (o, i, h) in per_shard {
            out.extend(o);
            inc.extend(i);
            horizon = horizon.min(h);
        }
        Some((out, inc, horizon))
    }

    /// Node rows retired at or before `now_us` (`valid_to` set and past):
    /// what [`Graph::compact`] would drop, but for rows a live edge still
    /// names or a commit has still to write.
    pub fn retired_nodes(&self, now_us: u64) -> usize {
        self.nodes
            .par_iter()
            .map(|s| s.valid_to.iter().filter(|&&t| t != 0 && t <= now_us).count())
            .sum()
    }

    /// Whether enough node rows are retired for a compaction to be due:
    /// an eighth of the rows, and at least `min_rows`.
    pub fn compaction_due(&self, now_us: u64, min_rows: usize) -> bool {
        let retired = self.retired_nodes(now_us);
        retired > 0 && retired >= min_rows.max(self.node_rows() / 8)
    }

    /// Drops the node and edge rows retired at or before `now_us`
    /// (`valid_to` set and past), but rows not yet committed (dirty) and
    /// nodes an edge row that stays still names. Each node shard that
    /// loses a row is rebuilt with its rows renumbered in order under the
    /// next generation, so an id taken before names nothing after
    /// ([`Graph::node`] answers `None`); every edge naming one of its rows
    /// is renamed, edge shards that lose a row are renumbered too. The
    /// hash indexes and the adjacency are rebuilt. O(rows).
    ///
    /// Whatever holds node ids or row numbers from before (caches,
    /// findings, per-row vectors) must be reset or renamed with
    /// [`Compaction::kept`]; history stays in the graph store.
    pub fn compact(&mut self, now_us: u64) -> Compaction {
        let retired = |t: u64| t != 0 && t <= now_us;
        // Edge rows dropped: retired and committed.
        let edge_drop: Vec<Vec<u32>> = self
            .edges
            .par_iter()
            .map(|s| {
                (0..s.len())
                    .filter(|&r| retired(s.valid_to[r]) && !s.dirty_set.get(r))
                    .map(|r| r as u32)
                    .collect()
            })
            .collect();
        // Retired nodes an edge that stays names stay too.
        let mut pinned: Vec<BitSet> = self.nodes.iter().map(|s| BitSet::with_len(s.len())).collect();
        for (shard, drop) in self.edges.iter().zip(&edge_drop) {
            let mut dropped = drop.iter().peekable();
            for r in 0..shard.len() {
                if dropped.peek().is_some_and(|&&d| d as usize == r) {
                    dropped.next();
                    continue;
                }
                for id in [shard.src[r], shard.dst[r]] {
                    let n = &self.nodes[id.shard()];
                    if n.valid_to.get(id.row() as usize).is_some_and(|&t| retired(t)) {
                        pinned[id.shard()].set(id.row() as usize, true);
                    }
                }
            }
        }
        let kept: Vec<Option<Vec<u32>>> = self
            .nodes
            .par_iter()
            .zip(&pinned)
            .map(|(s, pin)| {
                let drop = |r: usize| retired(s.valid_to[r]) && !s.dirty_set.get(r) && !pin.get(r);
                if !(0..s.len()).any(drop) {
                    return None;
                }
                Some((0..s.len()).filter(|&r| !drop(r)).map(|r| r as u32).collect())
            })
            .collect();
        drop(pinned);
        let nodes_dropped: usize = self
            .nodes
            .iter()
            .zip(&kept)
            .map(|(s, k)| k.as_ref().map_or(0, |k| s.len() - k.len()))
            .sum();
        let edges_dropped: usize = edge_drop.iter().map(Vec::len).sum();
        if nodes_dropped == 0 && edges_dropped == 0 {
            return Compaction {
                kept,
                nodes_dropped,
                edges_dropped,
            };
        }
        // Old row -> new row of each compacted shard (u32::MAX: dropped).
        let renamed: Vec<Option<Vec<u32>>> = self
            .nodes
            .par_iter()
            .zip(&kept)
            .map(|(s, k)| {
                let k = k.as_ref()?;
                let mut to = vec![u32::MAX; s.len()];
                for (new, &old) in k.iter().enumerate() {
                    to[old as usize] = new as u32;
                }
                Some(to)
            })
            .collect();
        let rename = |id: NodeSlot| match &renamed[id.shard()] {
            Some(to) => {
                let row = to[id.row() as usize];
                debug_assert_ne!(row, u32::MAX, "an edge that stays names a dropped node");
                NodeSlot::new(id.shard(), row)
            }
            None => id,
        };
        let any_renamed = renamed.iter().any(Option::is_some);
        self.edges.par_iter_mut().zip(&edge_drop).for_each(|(shard, drop)| {
            if !drop.is_empty() {
                let mut dropped = drop.iter().peekable();
                let keep: Vec<u32> = (0..shard.len() as u32)
                    .filter(|&r| {
                        let gone = dropped.peek().is_some_and(|&&d| d == r);
                        if gone {
                            dropped.next();
                        }
                        !gone
                    })
                    .collect();
                *shard = shard.compacted(&keep, rename);
            } else if any_renamed && (shard.src.iter().chain(&shard.dst)).any(|id| renamed[id.shard()].is_some()) {
                shard.rename_endpoints(rename);
            }
        });
        self.nodes.par_iter_mut().zip(&kept).for_each(|(shard, k)| {
            if let Some(k) = k {
                *shard = shard.compacted(k);
            }
        });
        self.rebuild_adjacency_from_scratch(now_us);
        Compaction {
            kept,
            nodes_dropped,
            edges_dropped,
        }
    }

    /// Frees the spare capacity of every column (after a large ingest).
    pub fn shrink_to_fit(&mut self) {
        self.nodes.par_iter_mut().for_each(NodeShard::shrink);
        self.edges.par_iter_mut().for_each(EdgeShard::shrink);
    }

    /// Heap bytes held by shards and the adjacency index (not the interner).
    pub fn heap_bytes(&self) -> usize {
        self.nodes.iter().map(NodeShard::heap_bytes).sum::<usize>()
            + self.edges.iter().map(EdgeShard::heap_bytes).sum::<usize>()
            + self.adj.heap_bytes()
    }

    /// Heap bytes by part: `(node columns, node arenas, edge shards, adjacency)`.
    pub fn heap_breakdown(&self) -> (usize, usize, usize, usize) {
        let arenas: usize = self.nodes.iter().map(|s| s.arena.capacity()).sum();
        let nodes: usize = self.nodes.iter().map(NodeShard::heap_bytes).sum();
        let edges: usize = self.edges.iter().map(EdgeShard::heap_bytes).sum();
        (nodes - arenas, arenas, edges, self.adj.heap_bytes())
    }

    /// Takes the rows changed since the last call, as versions to commit.
    /// Bumps the generation when anything changed.
    pub fn take_changes(&mut self) -> Changes {
        let rows = self.take_dirty_rows();
        self.versions(&rows)
    }

    /// The rows changed since the last call (or [`Graph::take_changes`]),
    /// without copying them; the generation moves on when there are any.
    pub fn take_dirty_rows(&mut self) -> DirtyRows {
        let rows = DirtyRows {
            nodes: self.nodes.iter_mut().map(NodeShard::take_dirty).collect(),
            edges: self.edges.iter_mut().map(EdgeShard::take_dirty).collect(),
        };
        if !rows.is_empty() {
            self.generation += 1;
        }
        rows
    }

    /// Every row, visible or not (a checkpoint of the graph).
    pub fn all_rows(&self) -> DirtyRows {
        DirtyRows {
            nodes: self.nodes.iter().map(|s| (0..s.len() as u32).collect()).collect(),
            edges: self.edges.iter().map(|s| (0..s.len() as u32).collect()).collect(),
        }
    }

    /// Every row, visible or not, as versions (a checkpoint of the graph).
    pub fn all_versions(&self) -> Changes {
        self.versions(&self.all_rows())
    }

    pub fn versions(&self, rows: &DirtyRows) -> Changes {
        let reader = self.interner.reader();
        let reader = &reader;
        // Collected into one allocation of their exact size, not grown and appended.
        let (node_rows, edge_rows) = rows.flat(self);
        let nodes: Vec<NodeVersion> = node_rows
            .into_par_iter()
            .map(|(s, row)| {
                let s = s as usize;
                let id = NodeId::new(s, row, self.nodes[s].generation);
                NodeVersion {
                    crn: self.crn_with(reader, id),
                    row: self.nodes[s].row(row),
                }
            })
            .collect();
        let edges: Vec<EdgeVersion> = edge_rows
            .into_par_iter()
            .map(|(s, row)| {
                let (shard, r) = (&self.edges[s as usize], row as usize);
                EdgeVersion {
                    src: self.crn_with(reader, self.node_id(shard.src[r])),
                    dst: self.crn_with(reader, self.node_id(shard.dst[r])),
                    relation: shard.rel[r],
                    inferred: shard.inferred.get(r),
                    valid_from: shard.valid_from[r],
                    valid_to: shard.valid_to[r],
                    props: shard.props[r].get(&shard.arena).to_vec(),
                }
            })
            .collect();
        Changes { nodes, edges }
    }

    /// Loads a stored node row (hydration at start). Not marked as changed.
    pub fn load_node(&mut self, row: &NodeRow) -> NodeId {
        let hash = key_hash(row.key, row.id.as_bytes());
        let s = node_shard_of(hash);
        let r = self.nodes[s].load(hash, row);
        NodeId::new(s, r, self.nodes[s].generation)
    }

    /// Loads a stored edge (hydration at start); `false` when an endpoint is unknown.
    pub fn load_edge(&mut self, e: &EdgeVersion) -> bool {
        self.load_edges(std::slice::from_ref(e)) == 0
    }

    /// Loads stored node rows in parallel, shard by shard (hydration at start).
    pub fn load_nodes(&mut self, rows: &[NodeRow]) {
        let hashes: Vec<u64> = rows.par_iter().map(|r| key_hash(r.key, r.id.as_bytes())).collect();
        let (off, perm) = partition(NODE_SHARDS, hashes.iter().map(|h| node_shard_of(*h)));
        self.nodes.par_iter_mut().enumerate().for_each(|(s, shard)| {
            let mine = &perm[off[s] as usize..off[s + 1] as usize];
            shard.reserve(
                mine.len(),
                mine.iter().map(|&i| rows[i as usize].props.len() + 32).sum(),
            );
            for &i in mine {
                shard.load(hashes[i as usize], &rows[i as usize]);
            }
        });
    }

    /// Loads stored edges in parallel (hydration at start); returns how
    /// many named an unknown endpoint and were skipped.
    pub fn load_edges(&mut self, edges: &[EdgeVersion]) -> usize {
        let reader = self.interner.reader();
        let this = &*self;
        let resolved: Vec<Option<(NodeId, NodeId)>> = edges
            .par_iter()
            .map(|e| {
                Some((
                    this.find_graph_form(&reader, &e.src)?,
                    this.find_graph_form(&reader, &e.dst)?,
                ))
            })
            .collect();
        drop(reader);
        let dangling = resolved.iter().filter(|r| r.is_none()).count();
        let keep: Vec<u32> = (0..edges.len() as u32)
            .filter(|&i| resolved[i as usize].is_some())
            .collect();
        let (off, perm) = partition(
            EDGE_SHARDS,
            keep.iter()
                .map(|&i| resolved[i as usize].map_or(0, |(src, _)| edge_shard_of(src))),
        );
        self.edges.par_iter_mut().enumerate().for_each(|(s, shard)| {
            let mut held = shard::HeldProps::default();
            for &k in &perm[off[s] as usize..off[s + 1] as usize] {
                let i = keep[k as usize] as usize;
                if let Some((src, dst)) = resolved[i] {
                    let e = &edges[i];
                    shard.upsert(
                        src,
                        dst,
                        e.relation,
                        e.inferred,
                        &e.props,
                        &mut held,
                        0,
                        0,
                        Some((e.valid_from, e.valid_to)),
                    );
                }
            }
        });
        dangling
    }

    /// Finds a node by a graph-form CRN without allocating.
    fn find_graph_form(&self, reader: &crate::intern::InternerReader<'_>, crn: &str) -> Option<NodeId> {
        let rest = crn.strip_prefix("crn:")?;
        let rest = rest.strip_prefix("svc:").unwrap_or(rest);
        let mut it = rest.splitn(6, ':');
        let key = NodeKeyRef {
            provider: reader.get(it.next()?)?,
            region: reader.get(it.next()?)?,
            service: reader.get(it.next()?)?,
            kind: reader.get(it.next()?)?,
            account: reader.get(it.next()?)?,
            id: it.next()?,
        };
        self.find_key(key)
    }

    /// The node with this CRN, visible or not.
    pub fn find(&self, crn: &Crn) -> Option<NodeId> {
        let reader = self.interner.reader();
        let key = NodeKeyRef {
            provider: reader.get(&crn.provider)?,
            region: reader.get(&crn.region)?,
            service: reader.get(&crn.service)?,
            kind: reader.get(&crn.kind)?,
            account: reader.get(&crn.account)?,
            id: &crn.id,
        };
        drop(reader);
        self.find_key(key)
    }

    pub fn find_key(&self, key: NodeKeyRef<'_>) -> Option<NodeId> {
        let hash = key.hash();
        let s = node_shard_of(hash);
        let shard = &self.nodes[s];
        shard
            .find(hash, &key.syms(), key.id.as_bytes())
            .map(|row| NodeId::new(s, row, shard.generation))
    }

    /// Starts loading what reading node `id` touches, one step of the chain
    /// at a time, for a walk that reads many nodes far apart:
    /// [`Prefetch::Row`] its columns and where its edges are listed, then,
    /// a few nodes later once those are in, [`Prefetch::Lists`] its tags,
    /// properties and edge lists. Reads nothing into the program.
    pub fn prefetch_node(&self, id: NodeId, stage: Prefetch) {
        let Some(shard) = self.nodes.get(id.shard()) else {
            return;
        };
        shard.prefetch_row(id.row() as usize, stage);
        match (self.adj.dense(id), stage) {
            (Some(d), Prefetch::Row) => self.adj.prefetch_offsets(d),
            (Some(d), Prefetch::Lists) => self.adj.prefetch_lists(d),
            (None, _) => {}
        }
    }

    /// The nodes at the other end of node `id`'s edges of relation `rel`
    /// visible at `now_us`, outgoing or incoming, in the adjacency index's
    /// order. Reads no edge row while the index says every edge it lists is
    /// visible ([`Adjacency::all_visible`]).
    pub fn neighbours(
        &self,
        id: NodeId,
        rel: Relation,
        outgoing: bool,
        now_us: u64,
    ) -> impl Iterator<Item = NodeId> + '_ {
        let adj = &self.adj;
        let check = !adj.all_visible(now_us);
        // An id from another generation has no neighbours (its row number
        // may be another node's now).
        adj.dense(id)
            .filter(|_| self.node_row_ok(id))
            .into_iter()
            .flat_map(move |d| adj.of_relation(d, rel, outgoing))
            .filter(move |(e, _)| !check || self.edge(*e).is_some_and(|e| visible(e.valid_to(), now_us)))
            .map(move |(_, n)| adj.node_id(n, |s| self.nodes.get(s).map_or(0, |n| n.generation)))
    }

    /// A view of a node; `None` for an id from another graph or generation.
    pub fn node(&self, id: NodeId) -> Option<NodeRef<'_>> {
        let shard = self.nodes.get(id.shard())?;
        ((id.row() as usize) < shard.len() && shard.generation == id.generation()).then(|| NodeRef::new(self, id))
    }

    pub fn edge(&self, id: EdgeId) -> Option<EdgeRef<'_>> {
        let shard = self.edges.get(id.shard())?;
        ((id.row() as usize) < shard.len()).then(|| EdgeRef::new(self, id))
    }

    /// Every node row (visible or not) in id order, starting after `after`.
    pub fn nodes_after(&self, after: Option<NodeId>) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        let (start_shard, start_row) = match after {
            Some(id) => (id.shard(), id.row() as usize + 1),
            None => (0, 0),
        };
        self.nodes
            .iter()
            .enumerate()
            .skip(start_shard)
            .flat_map(move |(s, shard)| {
                let from = if s == start_shard { start_row } else { 0 };
                (from..shard.len()).map(move |r| NodeRef::new(self, NodeId::new(s, r as u32, shard.generation)))
            })
    }

    /// Every node row, visible or not.
    pub fn nodes(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        self.nodes_after(None)
    }

    /// Every edge row, visible or not.
    pub fn edges(&self) -> impl Iterator<Item = EdgeRef<'_>> + '_ {
        self.edges
            .iter()
            .enumerate()
            .flat_map(move |(s, shard)| (0..shard.len()).map(move |r| EdgeRef::new(self, EdgeId::new(s, r as u32))))
    }

    pub fn is_node_visible(&self, id: NodeId, now_us: u64) -> bool {
        self.nodes
            .get(id.shard())
            .and_then(|s| s.valid_to.get(id.row() as usize))
            .is_some_and(|&vt| visible(vt, now_us))
    }

    /// An edge is visible when it and both its endpoints are.
    pub fn is_edge_visible(&self, id: EdgeId, now_us: u64) -> bool {
        let Some(shard) = self.edges.get(id.shard()) else {
            return false;
        };
        let r = id.row() as usize;
        r < shard.len()
            && visible(shard.valid_to[r], now_us)
            && self.is_node_visible(self.node_id(shard.src[r]), now_us)
            && self.is_node_visible(self.node_id(shard.dst[r]), now_us)
    }

    /// Sets one node's remediation stage; a change is versioned.
    pub fn set_phase(&mut self, id: NodeId, phase: Phase, now_us: u64) {
        if let Some(shard) = self.nodes.get_mut(id.shard())
            && (id.row() as usize) < shard.len()
            && shard.generation == id.generation()
        {
            shard.set_phase(id.row(), phase, now_us);
        }
    }

    /// Sets one node's verdict; a change is versioned.
    pub fn set_verdict(&mut self, id: NodeId, verdict: &Verdict<'_>, now_us: u64) -> bool {
        if let Some(shard) = self.nodes.get_mut(id.shard())
            && (id.row() as usize) < shard.len()
            && shard.generation == id.generation()
        {
            return shard.set_verdict(id.row(), verdict, now_us);
        }
        false
    }

    /// Sets the verdict of every node visible at `now_us`, shard by shard in
    /// parallel: `decide(id)` for nodes it has one for, [`Verdict::CLEAR`]
    /// for the rest. Returns how many rows changed.
    pub fn apply_verdicts<'v, F>(&mut self, now_us: u64, decide: F) -> usize
    where
        F: Fn(NodeId) -> Option<Verdict<'v>> + Sync,
    {
        self.nodes
            .par_iter_mut()
            .enumerate()
            .map(|(s, shard)| {
                let mut changed = 0;
                for r in 0..shard.len() {
                    if !visible(shard.valid_to[r], now_us) {
                        continue;
                    }
                    let id = NodeId::new(s, r as u32, shard.generation);
                    let v = decide(id).unwrap_or(Verdict::CLEAR);
                    changed += usize::from(shard.set_verdict(r as u32, &v, now_us));
                }
                changed
            })
            .sum()
    }

    /// The CRN of a node, in graph form.
    pub fn crn(&self, id: NodeId) -> String {
        let reader = self.interner.reader();
        self.crn_with(&reader, id)
    }

    /// The CRN of a node, in graph form, appended to `out` ([`crate::crn::write_crn`]'s text).
    pub fn crn_into(&self, reader: &crate::intern::InternerReader<'_>, id: NodeId, out: &mut Vec<u8>) {
        let shard = &self.nodes[id.shard()];
        debug_assert_eq!(shard.generation, id.generation(), "an id from another generation");
        let r = id.row() as usize;
        let k = shard.key[r];
        out.extend_from_slice(b"crn:");
        out.extend_from_slice(crate::crn::NAMESPACE.as_bytes());
        for part in [
            reader.resolve(k[0]).as_bytes(),
            reader.resolve(k[1]).as_bytes(),
            reader.resolve(k[2]).as_bytes(),
            reader.resolve(k[3]).as_bytes(),
            reader.resolve(k[4]).as_bytes(),
            shard.id[r].get(&shard.arena),
        ] {
            out.push(b':');
            out.extend_from_slice(part);
        }
    }

    pub fn crn_with(&self, reader: &crate::intern::InternerReader<'_>, id: NodeId) -> String {
        let shard = &self.nodes[id.shard()];
        debug_assert_eq!(shard.generation, id.generation(), "an id from another generation");
        let r = id.row() as usize;
        let k = shard.key[r];
        let mut out = String::with_capacity(64);
        crate::crn::write_crn(
            &mut out,
            [
                reader.resolve(k[0]),
                reader.resolve(k[1]),
                reader.resolve(k[2]),
                reader.resolve(k[3]),
                reader.resolve(k[4]),
                shard.id[r].get_str(&shard.arena),
            ],
        );
        out
    }

    /// Aggregates over the graph as visible at `now_us`.
    pub fn stats(&self, now_us: u64) -> GraphStats {
        let nodes = &self.nodes;
        let partial: Vec<(GraphStats, hashbrown::HashMap<Sym, u64>)> = nodes
            .par_iter()
            .map(|shard| {
                let mut st = GraphStats::default();
                let mut providers = hashbrown::HashMap::new();
                for r in 0..shard.len() {
                    st.total_nodes += 1;
                    if !visible(shard.valid_to[r], now_us) {
                        st.logically_deleted += 1;
                        continue;
                    }
                    st.active_nodes += 1;
                    let cost = f64::from(shard.cost[r]);
                    st.total_cost_usd_mo += cost;
                    if shard.waste.get(r) {
                        st.waste_nodes += 1;
                        st.projected_savings_usd_mo += cost;
                    }
                    *providers.entry(shard.key[r][0]).or_insert(0) += 1;
                }
                (st, providers)
            })
            .collect();
        let mut total = GraphStats::default();
        let mut providers: hashbrown::HashMap<Sym, u64> = hashbrown::HashMap::new();
        for (st, p) in partial {
            total.total_nodes += st.total_nodes;
            total.active_nodes += st.active_nodes;
            total.logically_deleted += st.logically_deleted;
            total.waste_nodes += st.waste_nodes;
            total.total_cost_usd_mo += st.total_cost_usd_mo;
            total.projected_savings_usd_mo += st.projected_savings_usd_mo;
            for (k, v) in p {
                *providers.entry(k).or_insert(0) += v;
            }
        }
        total.total_edges = self
            .edges
            .par_iter()
            .map(|shard| {
                (0..shard.len())
                    .filter(|&r| edge_row_visible(nodes, shard, r, now_us))
                    .count() as u64
            })
            .sum();
        total.providers = providers.into_iter().collect();
        total.providers.sort();
        total
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_adjacency;

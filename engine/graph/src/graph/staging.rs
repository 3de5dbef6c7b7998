//! A scan's nodes, staged by the shard that will own them while the
//! sources still stream, so that applying them after the scan copies
//! nothing into a shard that is still empty.
//!
//! A shard with no row when the scan begins (every shard, on a first
//! scan) gets its rows copied, as each batch arrives, into one staged
//! batch of its own, shared by every source of the scan: its buffer is
//! laid out as that shard's arena would be (each row's id, tags and
//! properties one after another, each a blob with its length before it),
//! and a list of runs says which source
//! staged which rows. After the scan the shard takes that buffer whole as
//! its arena ([`NodeShard::adopt`]), or, holding rows of a source whose
//! scan failed, upserts the staged rows one by one, skipping that source's.
//! A batch with no row for a shard that already holds rows is let go of as
//! soon as it is copied (a plugin source's decoders fill it again).
//!
//! A shard that already holds rows (a later scan) mostly finds them
//! unchanged: holding them until the scan ends would keep a second copy
//! of the estate. Given the graph to read ([`NodeStage::add_sifted`]), the
//! stage looks each such row up as it arrives: an unchanged one is kept as
//! its row number only (all its upsert would do is mark it seen), and the
//! others are copied into a batch of their own, kept and grouped by shard,
//! which those shards upsert from after the scan, as
//! [`Graph::ingest_nodes`] does. Without the graph ([`NodeStage::add`]) the
//! whole batch is kept.
//!
//! A staged batch that grew by doubling would copy its bytes to each new
//! buffer and fault in pages for it. So each one is given room at its
//! first rows, address space only: [`EMPTY_SHARD_ROOM`] bytes, which
//! glibc's `malloc` maps on their own ([`crate::malloc::MMAP_THRESHOLD`]),
//! whose pages cost nothing until written and which grow, when they must,
//! by moving pages (`mremap`) rather than copying them. Where the room
//! cannot be had the batch grows as any vector does.
//!
//! [`NodeShard::adopt`]: super::NodeShard::adopt

use std::sync::{Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;

use super::batch::{BatchNode, FoundNode};
use super::mem::{Span, push_blob_bytes};
use super::{Graph, IngestStats, NodeBatch, Sift, Staged, node_shard_of, partition, prefetch_ahead, upsert_shard_rows};
use crate::ids::NODE_SHARDS;

/// Bytes of room a shard with no row yet is given for its staged bytes
/// (and the same for its staged rows): address space, not memory.
pub const EMPTY_SHARD_ROOM: usize = crate::malloc::MMAP_THRESHOLD;

/// Rows of a batch from which [`NodeStage::add`] copies in parallel.
pub const PARALLEL_ROWS: usize = 2048;

/// The nodes of one scan, by owning node shard.
pub struct NodeStage {
    /// Whether each shard held no row when the scan began: its rows are
    /// copied into `shards`, the others' are found in `kept`.
    empty: Vec<bool>,
    shards: Vec<Mutex<StagedShard>>,
    kept: Mutex<Vec<Kept>>,
}

/// What the sources staged for one node shard: for one empty when the
/// scan began, its rows; for one that held rows, those found unchanged.
#[derive(Default)]
struct StagedShard {
    rows: NodeBatch,
    runs: Vec<Run>,
    /// Row numbers of the shard found unchanged, by run of source.
    unchanged: Vec<u32>,
    unchanged_runs: Vec<Run>,
    /// Rows found holding what a source sent under another content
    /// hash, and that hash ([`Sift::Rehashed`]).
    rehashed: Vec<(u32, u64)>,
    /// The row after the last one of the shard a sifted row was found
    /// at: where the next is looked for first (`NodeShard::sift_row`).
    next: u32,
}

/// A batch with rows for shards that already held some, grouped by shard.
struct Kept {
    source: usize,
    batch: NodeBatch,
    staged: Staged,
}

/// Rows up to `end` (from the end of the run before) staged by `source`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Run {
    end: u32,
    source: u32,
}

/// Records that what `source` staged now ends at `end`.
fn extend_runs(runs: &mut Vec<Run>, source: usize, end: usize) {
    let (end, source) = (end as u32, u32::try_from(source).unwrap_or(u32::MAX));
    match runs.last_mut() {
        Some(run) if run.source == source => run.end = end,
        _ => runs.push(Run { end, source }),
    }
}

/// The items of `staged` that sources which `land` staged, run by run.
fn landing<'a, T>(
    staged: &'a [T],
    runs: &'a [Run],
    land: &'a impl Fn(u32) -> bool,
) -> impl Iterator<Item = &'a T> + 'a {
    let mut start = 0;
    runs.iter().flat_map(move |run| {
        let items = staged.get(start..run.end as usize).unwrap_or_default();
        start = run.end as usize;
        if land(run.source) { items } else { &[] }
    })
}

/// Copies rows `which` of `batch` (their bytes too) to the end of `out`.
fn copy_rows(out: &mut NodeBatch, batch: &NodeBatch, which: &[u32]) {
    out.rows.reserve(which.len());
    for (j, &i) in which.iter().enumerate() {
        // The rows are scattered over the batch.
        prefetch_ahead(which, j, 16, |next, stage| batch.prefetch(next as usize, stage, true));
        let Some(n) = batch.rows.get(i as usize) else {
            continue;
        };
        let (id, tags, props) = copy_row_bytes(&mut out.buf, n, &batch.buf);
        out.rows.push(BatchNode { id, tags, props, ..*n });
    }
}

/// Copies a batch row's id, tags and properties to the end of `out`, each
/// as a blob (its length before it) so that the buffer can become a
/// shard's arena as it is ([`super::NodeShard::adopt`]). Returns the
/// spans of the bytes themselves.
pub(super) fn copy_row_bytes(out: &mut Vec<u8>, n: &BatchNode, buf: &[u8]) -> (Span, Span, Span) {
    (
        push_blob_bytes(out, n.id.get(buf)),
        push_blob_bytes(out, n.tags.get(buf)),
        push_blob_bytes(out, n.props.get(buf)),
    )
}

impl Default for NodeStage {
    fn default() -> NodeStage {
        NodeStage::new()
    }
}

impl NodeStage {
    /// A stage for a scan into an empty graph.
    pub fn new() -> NodeStage {
        NodeStage::with_empty(|_| true)
    }

    /// A stage for a scan into `graph`, as it is now.
    pub fn for_graph(graph: &Graph) -> NodeStage {
        NodeStage::with_empty(|s| graph.nodes.get(s).is_none_or(|shard| shard.is_empty()))
    }

    /// Whether any shard held rows when the scan began: whether a node
    /// can be found unchanged in it.
    pub fn held_rows(&self) -> bool {
        self.empty.iter().any(|&e| !e)
    }

    fn with_empty(empty: impl Fn(usize) -> bool) -> NodeStage {
        NodeStage {
            empty: (0..NODE_SHARDS).map(empty).collect(),
            shards: (0..NODE_SHARDS).map(|_| Mutex::default()).collect(),
            kept: Mutex::default(),
        }
    }

    fn shard(&self, s: usize) -> Option<MutexGuard<'_, StagedShard>> {
        self.shards
            .get(s)
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Stages `batch`, from `source`: its rows for shards that were empty
    /// are copied into their staged batches, each under its own lock
    /// (sources add at once); the batch itself is kept when it has rows
    /// for any other shard, and handed back otherwise, to be filled again.
    /// A batch of `PARALLEL_ROWS` (2,048) rows or more is copied shard by shard
    /// in parallel: a source that hands its batches on one after another
    /// (the in-process mock estate, all at once after generating them)
    /// would otherwise copy on one thread what the shards copy in
    /// parallel when they upsert.
    pub fn add(&self, source: usize, batch: NodeBatch) -> Option<NodeBatch> {
        self.add_found(source, &batch.found);
        let (off, perm) = partition(NODE_SHARDS, batch.rows.iter().map(|r| node_shard_of(r.hash)));
        let rows_for = |s: usize| match (off.get(s), off.get(s + 1)) {
            (Some(&a), Some(&b)) => perm.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        };
        let stage = |s: usize| {
            let mine = rows_for(s);
            if self.empty.get(s) == Some(&true)
                && !mine.is_empty()
                && let Some(mut shard) = self.shard(s)
            {
                shard.append(source, &batch, mine);
            }
        };
        if !self.empty.iter().any(|&e| e) {
            // A later scan: nothing to copy.
        } else if batch.len() >= PARALLEL_ROWS {
            (0..NODE_SHARDS).into_par_iter().with_min_len(16).for_each(stage);
        } else {
            (0..NODE_SHARDS).for_each(stage);
        }
        let keep = (0..NODE_SHARDS).any(|s| self.empty.get(s) == Some(&false) && !rows_for(s).is_empty());
        if !keep {
            return Some(batch);
        }
        let kept = Kept {
            source,
            batch,
            staged: Staged { off, perm },
        };
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).push(kept);
        None
    }

    /// Stages `batch`, from `source`, as [`NodeStage::add`] does, but for
    /// the shards that held rows keeps only what changes `graph` (the
    /// graph the stage was made for, read-locked by the caller): a row
    /// found unchanged becomes its row number; the others are copied into
    /// a batch of their own, which is kept. `batch` is handed back, to be
    /// filled again.
    pub fn add_sifted(&self, source: usize, batch: NodeBatch, graph: &Graph) -> Option<NodeBatch> {
        if self.empty.iter().all(|&e| e) {
            return self.add(source, batch);
        }
        let (off, perm) = partition(NODE_SHARDS, batch.rows.iter().map(|r| node_shard_of(r.hash)));
        let rows_for = |s: usize| match (off.get(s), off.get(s + 1)) {
            (Some(&a), Some(&b)) => perm.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        };
        // Per shard: the batch's rows that change it (empty shards copy theirs).
        let sift = |s: usize| -> Vec<u32> {
            let mine = rows_for(s);
            if mine.is_empty() {
                return Vec::new();
            }
            let Some(mut staged) = self.shard(s) else {
                return Vec::new();
            };
            if self.empty.get(s) == Some(&true) {
                staged.append(source, &batch, mine);
                return Vec::new();
            }
            let Some(shard) = graph.nodes.get(s) else {
                return mine.to_vec();
            };
            let mut changed = Vec::new();
            let before = staged.unchanged.len();
            let mut guess = staged.next;
            for &i in mine {
                let Some(n) = batch.rows.get(i as usize) else { continue };
                match shard.sift_row(n, &batch.buf, guess) {
                    Some((row, sift)) => {
                        guess = row.wrapping_add(1);
                        match sift {
                            Sift::Unchanged => staged.unchanged.push(row),
                            Sift::Rehashed => {
                                staged.unchanged.push(row);
                                staged.rehashed.push((row, n.content));
                            }
                            Sift::Changed => changed.push(i),
                        }
                    }
                    None => changed.push(i),
                }
            }
            staged.next = guess;
            if staged.unchanged.len() > before {
                let end = staged.unchanged.len();
                extend_runs(&mut staged.unchanged_runs, source, end);
            }
            changed
        };
        self.add_found(source, &batch.found);
        let changed: Vec<u32> = if batch.len() >= PARALLEL_ROWS {
            (0..NODE_SHARDS)
                .into_par_iter()
                .with_min_len(16)
                .flat_map_iter(sift)
                .collect()
        } else {
            (0..NODE_SHARDS).flat_map(sift).collect()
        };
        if !changed.is_empty() {
            let mut kept = NodeBatch::default();
            copy_rows(&mut kept, &batch, &changed);
            let (off, perm) = partition(NODE_SHARDS, kept.rows.iter().map(|r| node_shard_of(r.hash)));
            let kept = Kept {
                source,
                batch: kept,
                staged: Staged { off, perm },
            };
            self.kept.lock().unwrap_or_else(PoisonError::into_inner).push(kept);
        }
        Some(batch)
    }

    /// Records the nodes `source` sent that were found unchanged before
    /// they were decoded ([`NodeBatch::found`]): their rows are marked
    /// seen when the stage is applied, as the rows sifted unchanged are.
    fn add_found(&self, source: usize, found: &[FoundNode]) {
        if found.is_empty() {
            return;
        }
        let (off, perm) = partition(NODE_SHARDS, found.iter().map(|f| usize::from(f.shard)));
        for s in 0..NODE_SHARDS {
            let mine = match (off.get(s), off.get(s + 1)) {
                (Some(&a), Some(&b)) if a < b => perm.get(a as usize..b as usize).unwrap_or_default(),
                _ => continue,
            };
            // A shard that was empty holds no row to have been found.
            if self.empty.get(s) != Some(&false) {
                continue;
            }
            let Some(mut staged) = self.shard(s) else { continue };
            staged
                .unchanged
                .extend(mine.iter().filter_map(|&i| found.get(i as usize)).map(|f| f.row));
            let end = staged.unchanged.len();
            extend_runs(&mut staged.unchanged_runs, source, end);
        }
    }

    /// Rows staged so far, from every source.
    #[cfg(test)]
    fn len(&self) -> usize {
        let copied: usize = (0..NODE_SHARDS)
            .filter_map(|s| self.shard(s))
            .map(|shard| shard.rows.len() + shard.unchanged.len())
            .sum();
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let kept: usize = kept
            .iter()
            .map(|k| {
                (0..NODE_SHARDS)
                    .filter(|&s| self.empty.get(s) == Some(&false))
                    .map(|s| k.staged.rows_in(s))
                    .sum::<usize>()
            })
            .sum();
        copied + kept
    }
}

impl StagedShard {
    fn append(&mut self, source: usize, batch: &NodeBatch, mine: &[u32]) {
        let out = &mut self.rows;
        if out.rows.capacity() == 0 {
            // Without the room, the batch grows as it must.
            let _ = out
                .rows
                .try_reserve_exact(EMPTY_SHARD_ROOM / std::mem::size_of::<BatchNode>());
            let _ = out.buf.try_reserve_exact(EMPTY_SHARD_ROOM);
        }
        copy_rows(out, batch, mine);
        let end = out.rows.len();
        extend_runs(&mut self.runs, source, end);
    }

    /// The staged rows of sources that `land`, run by run.
    fn landing<'a>(&'a self, land: &'a impl Fn(u32) -> bool) -> impl Iterator<Item = &'a BatchNode> + 'a {
        landing(&self.rows.rows, &self.runs, land)
    }
}

impl Graph {
    /// Applies what `stage` holds from the sources for which `ok[source]`
    /// is true (the rows of any other are dropped): a shard that is still
    /// empty adopts its staged rows whole, one that was empty but holds
    /// rows of a failed source upserts the others' in order, and one that
    /// held rows already upserts its rows from the kept batches.
    pub fn ingest_node_stage(&mut self, stage: NodeStage, ok: &[bool], now_us: u64, scan: u32) -> IngestStats {
        let land = |source: u32| ok.get(source as usize).copied().unwrap_or(false);
        let staged: Vec<StagedShard> = stage
            .shards
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
            .collect();
        let (batches, parts): (Vec<NodeBatch>, Vec<Staged>) = stage
            .kept
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_iter()
            .filter(|k| ok.get(k.source).copied().unwrap_or(false))
            .map(|k| (k.batch, k.staged))
            .unzip();
        let parts: Vec<(&[u32], &[u32])> = parts.iter().map(|p| (&p.off[..], &p.perm[..])).collect();
        let empty = stage.empty;
        self.nodes
            .par_iter_mut()
            .zip(staged)
            .enumerate()
            .map(|(s, (shard, staged))| {
                if empty.get(s) == Some(&false) {
                    let unchanged: Vec<u32> = landing(&staged.unchanged, &staged.unchanged_runs, &land)
                        .copied()
                        .collect();
                    shard.seen_unchanged(&unchanged, scan);
                    // The same content whichever source sent it.
                    shard.rehash(&staged.rehashed);
                    let mut stats = upsert_shard_rows(shard, s, &batches, &parts, now_us, scan);
                    stats.unchanged += unchanged.len();
                    return stats;
                }
                if shard.is_empty() && shard.arena.is_empty() && staged.runs.iter().all(|r| land(r.source)) {
                    return shard.adopt(staged.rows, now_us, scan);
                }
                let mut stats = IngestStats::default();
                if shard.is_empty() {
                    shard.reserve_for(staged.landing(&land));
                }
                for n in staged.landing(&land) {
                    stats.add(shard.upsert(n, &staged.rows.buf, now_us, scan).1);
                }
                stats
            })
            .reduce(IngestStats::default, IngestStats::merge)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::graph::{NodeInput, NodeKeyRef};
    use crate::intern::Interner;

    /// Nodes `ids` of one batch, each with its own tags and properties;
    /// `version` changes every node's properties.
    fn batch(i: &Interner, ids: impl IntoIterator<Item = usize>, version: i64) -> NodeBatch {
        let mut b = NodeBatch::default();
        let (size, owner) = (i.intern("size_gib"), i.intern("owner"));
        for k in ids {
            let id = format!("vol-{k:06}");
            let key = NodeKeyRef {
                provider: i.intern("aws"),
                region: i.intern("us-east-1"),
                service: i.intern("ec2"),
                kind: i.intern("volume"),
                account: i.intern("123456789012"),
                id: &id,
            };
            let input = NodeInput {
                key,
                ty: i.intern("ec2:volume"),
                state: i.intern(if k % 3 == 0 { "available" } else { "in-use" }),
                cost_usd_mo: k as f32,
                creation_ts: 1_700_000_000 + k as u64,
            };
            let team = (owner, i.intern(&format!("team-{}", k % 7)));
            b.push(input, &[team], |w| {
                w.int(size, k as i64 * 10 + version);
                w.str(owner, &id);
            });
        }
        b
    }

    /// Every node as read back, by CRN.
    fn read(g: &Graph) -> Vec<String> {
        let mut all: Vec<String> = g
            .nodes()
            .map(|n| {
                let tags: Vec<_> = n.tags().collect();
                let props: Vec<_> = n.props().collect();
                format!(
                    "{} {:?} {} {} {} {:?} {:?}",
                    n.crn(),
                    n.state(),
                    n.cost_usd_mo(),
                    n.creation_ts(),
                    n.valid_from(),
                    tags,
                    props
                )
            })
            .collect();
        all.sort();
        all
    }

    /// Two graphs after the same first scan of nodes `ids`: through the
    /// stage, and through [`Graph::ingest_nodes`].
    fn first_scan(i: &Arc<Interner>, ids: std::ops::Range<usize>) -> (Graph, Graph) {
        let mut g = Graph::new(i.clone());
        let mut h = Graph::new(i.clone());
        g.ingest_node_stage(staged(&g, vec![batch(i, ids.clone(), 0)]).0, &[true], 7, 1);
        h.ingest_nodes(&[batch(i, ids, 0)], 7, 1);
        (g, h)
    }

    /// Rows of the batches the stage kept (changed or new ones).
    fn kept_rows(stage: &NodeStage) -> usize {
        let kept = stage.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter().map(|k| k.batch.len()).sum()
    }

    /// What a stage for `g` holds once each batch is added, as source
    /// `k` (batch `k`), with the batches the stage handed back.
    fn staged(g: &Graph, sources: Vec<NodeBatch>) -> (NodeStage, usize) {
        let stage = NodeStage::for_graph(g);
        let handed_back = sources
            .into_iter()
            .enumerate()
            .filter_map(|(k, b)| stage.add(k, b))
            .count();
        (stage, handed_back)
    }

    #[test]
    fn a_first_scan_takes_the_staged_buffers_as_its_arenas_and_reads_as_upserts_would() {
        let i = Arc::new(Interner::new());
        // Two sources; 2000..3000 staged by both, the second with other properties.
        let both = || vec![batch(&i, 0..3000, 0), batch(&i, 2000..5000, 1)];
        let mut g = Graph::new(i.clone());
        let (stage, handed_back) = staged(&g, both());
        assert_eq!((stage.len(), handed_back), (6000, 2), "every row copied, no batch kept");
        // Where each shard's staged bytes are, when nothing must grow them.
        let unmoved: Vec<Option<*const u8>> = stage
            .shards
            .iter()
            .map(|m| {
                let s = m.lock().unwrap_or_else(PoisonError::into_inner);
                let buf = &s.rows.buf;
                (buf.capacity() >= buf.len() + buf.len() / 8).then_some(buf.as_ptr())
            })
            .collect();
        let stats = g.ingest_node_stage(stage, &[true, true], 7, 1);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (5000, 1000, 0));
        let kept = unmoved
            .iter()
            .zip(&g.nodes)
            .filter(|(p, s)| p.is_some_and(|p| p == s.arena.as_ptr()));
        assert!(kept.count() > 0, "no arena is a staged buffer: the bytes were copied");
        for (p, s) in unmoved.iter().zip(&g.nodes) {
            if let Some(p) = p {
                assert_eq!(*p, s.arena.as_ptr(), "a staged buffer with room enough was copied");
            }
        }
        let mut h = Graph::new(i.clone());
        let upserted = h.ingest_nodes(&both(), 7, 1);
        assert_eq!(upserted, stats);
        assert_eq!(read(&g), read(&h));
        assert_eq!(g.node_rows(), 5000);
    }

    #[test]
    fn a_failed_sources_rows_land_nowhere_and_the_others_land_whole() {
        let i = Arc::new(Interner::new());
        let three = || {
            vec![
                batch(&i, 0..2000, 0),
                batch(&i, 1000..4000, 1),
                batch(&i, 4000..4500, 2),
            ]
        };
        let mut g = Graph::new(i.clone());
        let stats = g.ingest_node_stage(staged(&g, three()).0, &[true, false, true], 7, 1);
        assert_eq!((stats.inserted, stats.changed), (2500, 0));
        let mut h = Graph::new(i.clone());
        let mut landing = three();
        landing.remove(1);
        h.ingest_nodes(&landing, 7, 1);
        assert_eq!(read(&g), read(&h), "only the failed source's rows are missing");
        // A later scan: the failed source's rows are in kept batches now.
        let later = || vec![batch(&i, 0..100, 3), batch(&i, 0..4000, 4)];
        let stats = g.ingest_node_stage(staged(&g, later()).0, &[true, false], 9, 2);
        assert_eq!((stats.inserted, stats.changed), (0, 100));
        h.ingest_nodes(&later()[..1], 9, 2);
        assert_eq!(read(&g), read(&h));
        // A source index beyond the list does not land either.
        let mut g = Graph::new(i.clone());
        let stats = g.ingest_node_stage(staged(&g, vec![batch(&i, 0..10, 0)]).0, &[], 7, 1);
        assert_eq!((stats.total(), g.node_rows()), (0, 0));
    }

    #[test]
    fn a_later_scan_keeps_the_batches_and_upserts_from_them() {
        let i = Arc::new(Interner::new());
        let (mut g, mut h) = first_scan(&i, 0..3000);
        assert!(g.nodes.iter().all(|s| !s.is_empty()));
        // 0..1000 unchanged, 1000..3000 changed, 3000..3500 new.
        let later = || vec![batch(&i, 0..1000, 0), batch(&i, 1000..3500, 5)];
        let (stage, handed_back) = staged(&g, later());
        assert_eq!(
            (stage.len(), handed_back),
            (3500, 0),
            "nothing copied, every batch kept"
        );
        assert!(stage.shards.iter().all(|m| m.lock().is_ok_and(|s| s.rows.is_empty())));
        let stats = g.ingest_node_stage(stage, &[true, true], 9, 2);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (500, 2000, 1000));
        assert_eq!(h.ingest_nodes(&later(), 9, 2), stats);
        assert_eq!(read(&g), read(&h));
    }

    #[test]
    fn a_later_scan_given_the_graph_keeps_only_what_changes_it() {
        let i = Arc::new(Interner::new());
        let (mut g, mut h) = first_scan(&i, 0..3000);
        // Source 0: 0..1000 unchanged; source 1: 1000..2000 changed and
        // 3000..3500 new; source 2, which fails: 2000..3000 unchanged.
        let later = || {
            vec![
                batch(&i, 0..1000, 0),
                batch(&i, (1000..2000).chain(3000..3500), 5),
                batch(&i, 2000..3000, 0),
            ]
        };
        let stage = NodeStage::for_graph(&g);
        let handed_back = later()
            .into_iter()
            .enumerate()
            .filter_map(|(k, b)| stage.add_sifted(k, b, &g))
            .count();
        assert_eq!(handed_back, 3, "every batch handed back to be filled again");
        let kept = kept_rows(&stage);
        assert_eq!(kept, 1500, "only the changed and new rows are copied");
        assert_eq!(stage.len(), 3500);
        let stats = g.ingest_node_stage(stage, &[true, true, false], 9, 2);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (500, 1000, 1000));
        assert_eq!(h.ingest_nodes(&later()[..2], 9, 2), stats);
        assert_eq!(read(&g), read(&h));
        for (a, b) in g.nodes.iter().zip(&h.nodes) {
            assert_eq!(
                a.seen.as_slice(),
                b.seen.as_slice(),
                "the failed source marked nothing seen"
            );
        }
        // A first scan given the graph copies as before.
        let mut fresh = Graph::new(i.clone());
        let stage = NodeStage::for_graph(&fresh);
        assert!(stage.add_sifted(0, batch(&i, 0..100, 0), &fresh).is_some());
        assert_eq!(fresh.ingest_node_stage(stage, &[true], 7, 1).inserted, 100);
    }

    #[test]
    fn a_later_scan_in_another_order_sifts_as_upserts_would() {
        let i = Arc::new(Interner::new());
        let (mut g, mut h) = first_scan(&i, 0..3000);
        // One source: backwards, then every other one changed, then the
        // others with new ones, then a shuffle; 0..100 not reported.
        let later = || {
            vec![
                batch(&i, (2000..3000).rev(), 0),
                batch(&i, (1000..2000).step_by(2), 5),
                batch(&i, (1001..2000).step_by(2).chain(3000..3200), 0),
                batch(&i, (0..900).map(|k| (k * 7919) % 900 + 100), 0),
            ]
        };
        let stage = NodeStage::for_graph(&g);
        for b in later() {
            assert!(stage.add_sifted(0, b, &g).is_some());
        }
        let kept = kept_rows(&stage);
        assert_eq!(kept, 700, "only the changed and new rows are copied");
        let stats = g.ingest_node_stage(stage, &[true], 9, 2);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (200, 500, 2400));
        assert_eq!(h.ingest_nodes(&later(), 9, 2), stats);
        assert_eq!(read(&g), read(&h));
        // Whatever the guess, a row is found where the index has it.
        let b = batch(&i, 0..3200, 9);
        for n in &b.rows {
            let shard = &g.nodes[node_shard_of(n.hash)];
            let want = shard.sift_row(n, &b.buf, u32::MAX);
            let (row, sift) = want.expect("every node has its row");
            assert_eq!(sift, Sift::Changed);
            for guess in [0, row.saturating_sub(1), row, row + 1, shard.len() as u32] {
                assert_eq!(shard.sift_row(n, &b.buf, guess), want);
            }
        }
        let gone = batch(&i, 5000..5001, 0);
        let shard = &g.nodes[node_shard_of(gone.rows[0].hash)];
        assert_eq!(shard.sift_row(&gone.rows[0], &gone.buf, 0), None);
    }

    #[test]
    fn shards_empty_at_the_start_adopt_while_the_others_upsert_in_one_scan() {
        let i = Arc::new(Interner::new());
        let (mut g, mut h) = first_scan(&i, 0..20);
        let empty = g.nodes.iter().filter(|s| s.is_empty()).count();
        assert!(empty > 200 && empty < 256);
        let later = || vec![batch(&i, 0..3000, 1), batch(&i, 2500..4000, 2)];
        let (stage, handed_back) = staged(&g, later());
        assert_eq!((stage.len(), handed_back), (4500, 0));
        let stats = g.ingest_node_stage(stage, &[true, true], 9, 2);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (3980, 520, 0));
        assert_eq!(h.ingest_nodes(&later(), 9, 2), stats);
        assert_eq!(read(&g), read(&h));
    }

    /// The nodes of `b` as found before decoding: each one's row where
    /// `g` holds it live with the same content hash.
    fn found_in(g: &Graph, b: &NodeBatch) -> NodeBatch {
        let mut found = NodeBatch::default();
        for n in &b.rows {
            let s = node_shard_of(n.hash);
            let row = g.nodes[s]
                .unchanged_row(n.hash, &n.syms, n.id.get(&b.buf), n.content, 0)
                .expect("an unchanged node is found");
            found.found.push(FoundNode {
                shard: s as u16,
                row,
                provider: n.syms[0],
            });
        }
        found
    }

    #[test]
    fn nodes_found_before_decoding_are_seen_as_the_rows_sifted_unchanged_are() {
        let i = Arc::new(Interner::new());
        let (mut g, mut h) = first_scan(&i, 0..3000);
        // 0..1000 found, 1000..2000 sent again as they were, 2000..2100
        // changed, 2100..2200 found by a source whose scan fails.
        let changed = batch(&i, 2000..2100, 5);
        for n in &changed.rows {
            let shard = &g.nodes[node_shard_of(n.hash)];
            assert_eq!(
                shard.unchanged_row(n.hash, &n.syms, n.id.get(&changed.buf), n.content, 0),
                None
            );
        }
        let stage = NodeStage::for_graph(&g);
        for b in [found_in(&g, &batch(&i, 0..1000, 0)), batch(&i, 1000..2000, 0), changed] {
            assert!(stage.add_sifted(0, b, &g).is_some());
        }
        assert!(
            stage
                .add_sifted(1, found_in(&g, &batch(&i, 2100..2200, 0)), &g)
                .is_some()
        );
        assert_eq!(kept_rows(&stage), 100, "only the changed rows are copied");
        let stats = g.ingest_node_stage(stage, &[true, false], 9, 2);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (0, 100, 2000));
        let decoded = [batch(&i, 0..2000, 0), batch(&i, 2000..2100, 5)];
        assert_eq!(h.ingest_nodes(&decoded, 9, 2), stats);
        assert_eq!(read(&g), read(&h));
        let seen_by = |g: &Graph, ids: std::ops::Range<usize>| -> Vec<u32> {
            let b = batch(&i, ids, 0);
            let mut scans: Vec<u32> = b
                .rows
                .iter()
                .map(|n| {
                    let shard = &g.nodes[node_shard_of(n.hash)];
                    let (row, _) = shard.sift_row(n, &b.buf, 0).expect("row");
                    shard.seen[row as usize]
                })
                .collect();
            scans.dedup();
            scans
        };
        assert_eq!(seen_by(&g, 0..2100), [2], "found, sifted and changed rows are seen");
        assert_eq!(seen_by(&g, 2100..2200), [1], "a failed source's found rows are not");
        // Found rows handed to the graph directly are seen as well.
        let stats = h.ingest_nodes(&[found_in(&h, &batch(&i, 2100..2200, 0))], 11, 3);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (0, 0, 100));
        assert_eq!(seen_by(&h, 2100..2200), [3]);
    }

    #[test]
    fn a_row_sent_with_its_content_under_another_hash_takes_the_hash_and_nothing_else() {
        let i = Arc::new(Interner::new());
        let (mut g, mut h) = first_scan(&i, 0..500);
        for graph in [&mut g, &mut h] {
            graph.nodes.iter_mut().for_each(|s| drop(s.take_dirty()));
        }
        // The same fields with another content hash, as a fingerprint of
        // the properties' bytes in another key order would be.
        let rehashed = |ids: std::ops::Range<usize>| {
            let mut b = batch(&i, ids, 0);
            b.rows.iter_mut().for_each(|n| n.content = n.content.rotate_left(7) ^ 1);
            b
        };
        let stage = NodeStage::for_graph(&g);
        assert!(stage.add_sifted(0, rehashed(0..500), &g).is_some());
        assert_eq!(kept_rows(&stage), 0, "no row is copied");
        let stats = g.ingest_node_stage(stage, &[true], 9, 2);
        assert_eq!((stats.changed, stats.unchanged), (0, 500));
        assert_eq!(h.ingest_nodes(&[rehashed(0..500)], 9, 2), stats);
        for graph in [&mut g, &mut h] {
            assert!(
                graph.nodes.iter_mut().all(|s| s.take_dirty().is_empty()),
                "no version is written"
            );
            let b = rehashed(0..500);
            assert_eq!(found_in(graph, &b).found.len(), 500, "each row holds the new hash");
        }
        assert_eq!(read(&g), read(&h));
        // Other fields under another hash are a change.
        let mut other = batch(&i, 0..10, 3);
        other.rows.iter_mut().for_each(|n| n.content = 1);
        assert_eq!(g.ingest_nodes(&[other], 11, 3).changed, 10);
    }
}

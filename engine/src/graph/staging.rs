//! A scan's nodes, staged by the shard that will own them while the
//! sources still stream, so that applying them after the scan copies
//! nothing into a shard that is still empty.
//!
//! Each source's node batches are copied, as they arrive, into one staged
//! batch per node shard, shared by every source of the scan: its buffer is
//! laid out as that shard's arena would be (each row's id, tags and
//! properties one after another), and a list of runs says which source
//! staged which rows. The batch a decoder wrote is let go of as soon as it
//! is copied (a plugin source's decoders fill it again), not held to the
//! end of the scan. A shard with no row yet (a first scan) then takes its
//! staged buffer whole as its arena ([`NodeShard::adopt`]); any other
//! shard, and one holding rows of a source whose scan failed, upserts the
//! staged rows one by one, skipping that source's.
//!
//! A staged batch that grew by doubling would copy its bytes to each new
//! buffer and fault in pages for it. So each one is given room at its
//! first rows: as much as its shard holds now (a later scan mostly reports
//! the nodes the last one did), and for a shard with no row yet, address
//! space only, [`EMPTY_SHARD_ROOM`] bytes: from glibc's `malloc` that is a
//! mapping of its own ([`crate::malloc::MMAP_THRESHOLD`]), whose pages
//! cost nothing until written and which grows, when it must, by moving
//! pages (`mremap`) rather than copying them. Where the room cannot be had
//! the batch grows as any vector does.
//!
//! [`NodeShard::adopt`]: super::NodeShard::adopt

use std::sync::{Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;

use super::batch::BatchNode;
use super::shard::push_row_bytes;
use super::{Graph, IngestStats, NodeBatch, node_shard_of, partition, prefetch_ahead};
use crate::ids::NODE_SHARDS;

/// Bytes of room a shard with no row yet is given for its staged bytes
/// (and the same for its staged rows): address space, not memory.
pub const EMPTY_SHARD_ROOM: usize = crate::malloc::MMAP_THRESHOLD;

/// Rows of a batch from which [`NodeStage::add`] copies in parallel.
pub const PARALLEL_ROWS: usize = 2048;

/// The nodes of one scan, by owning node shard.
pub struct NodeStage {
    shards: Vec<Mutex<StagedShard>>,
}

/// What the sources staged for one node shard.
#[derive(Default)]
struct StagedShard {
    rows: NodeBatch,
    runs: Vec<Run>,
    /// Rows and bytes to make room for at the first rows.
    room: (usize, usize),
}

/// Rows up to `end` (from the end of the run before) staged by `source`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Run {
    end: u32,
    source: u32,
}

impl Default for NodeStage {
    fn default() -> NodeStage {
        NodeStage::new()
    }
}

impl NodeStage {
    /// A stage for a scan into an empty graph.
    pub fn new() -> NodeStage {
        NodeStage::with_room(|_| EMPTY)
    }

    /// A stage for a scan into `graph`: each shard's staging has room for
    /// the rows and bytes the shard holds now, or [`EMPTY_SHARD_ROOM`].
    pub fn for_graph(graph: &Graph) -> NodeStage {
        NodeStage::with_room(|s| match graph.nodes.get(s) {
            Some(shard) if !shard.is_empty() => (shard.len(), shard.arena.len()),
            _ => EMPTY,
        })
    }

    fn with_room(room: impl Fn(usize) -> (usize, usize)) -> NodeStage {
        NodeStage {
            shards: (0..NODE_SHARDS)
                .map(|s| {
                    Mutex::new(StagedShard {
                        room: room(s),
                        ..StagedShard::default()
                    })
                })
                .collect(),
        }
    }

    fn shard(&self, s: usize) -> Option<MutexGuard<'_, StagedShard>> {
        self.shards
            .get(s)
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Copies `batch`, from `source`, into the staged batches of the shards
    /// its rows belong to, each under its own lock (sources add at once).
    /// A batch of [`PARALLEL_ROWS`] rows or more is copied shard by shard
    /// in parallel: a source that hands its batches on one after another
    /// (the in-process mock estate, all at once after generating them)
    /// would otherwise copy on one thread what the shards copied in
    /// parallel before.
    pub fn add(&self, source: usize, batch: &NodeBatch) {
        let (off, perm) = partition(NODE_SHARDS, batch.rows.iter().map(|r| node_shard_of(r.hash)));
        let stage = |s: usize| {
            let mine = match (off.get(s), off.get(s + 1)) {
                (Some(&a), Some(&b)) => perm.get(a as usize..b as usize).unwrap_or_default(),
                _ => &[],
            };
            if !mine.is_empty()
                && let Some(mut shard) = self.shard(s)
            {
                shard.append(source, batch, mine);
            }
        };
        if batch.len() >= PARALLEL_ROWS {
            (0..NODE_SHARDS).into_par_iter().with_min_len(16).for_each(stage);
        } else {
            (0..NODE_SHARDS).for_each(stage);
        }
    }

    /// Rows staged so far, from every source.
    pub fn len(&self) -> usize {
        (0..NODE_SHARDS)
            .filter_map(|s| self.shard(s))
            .map(|shard| shard.rows.len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The room of a shard with no row yet: [`EMPTY_SHARD_ROOM`] bytes each
/// for its rows and its bytes.
const EMPTY: (usize, usize) = (EMPTY_SHARD_ROOM / std::mem::size_of::<BatchNode>(), EMPTY_SHARD_ROOM);

impl StagedShard {
    fn append(&mut self, source: usize, batch: &NodeBatch, mine: &[u32]) {
        let out = &mut self.rows;
        if out.rows.capacity() == 0 {
            let (rows, bytes) = std::mem::take(&mut self.room);
            // Without the room, the batch grows as it must.
            let _ = out.rows.try_reserve_exact(rows);
            let _ = out.buf.try_reserve_exact(bytes);
        }
        out.rows.reserve(mine.len());
        for (j, &i) in mine.iter().enumerate() {
            // The shard's rows are scattered over the batch.
            prefetch_ahead(mine, j, 16, |next, stage| batch.prefetch(next as usize, stage, true));
            let Some(n) = batch.rows.get(i as usize) else {
                continue;
            };
            let (id, tags, props) = push_row_bytes(&mut out.buf, n, &batch.buf);
            out.rows.push(BatchNode { id, tags, props, ..*n });
        }
        let end = out.rows.len() as u32;
        let source = u32::try_from(source).unwrap_or(u32::MAX);
        match self.runs.last_mut() {
            Some(run) if run.source == source => run.end = end,
            _ => self.runs.push(Run { end, source }),
        }
    }

    /// The staged rows of sources that `land`, run by run.
    fn landing<'a>(&'a self, land: &'a impl Fn(u32) -> bool) -> impl Iterator<Item = &'a BatchNode> + 'a {
        let mut start = 0;
        self.runs.iter().flat_map(move |run| {
            let rows = self.rows.rows.get(start..run.end as usize).unwrap_or_default();
            start = run.end as usize;
            if land(run.source) { rows } else { &[] }
        })
    }
}

impl Graph {
    /// Applies what `stage` holds from the sources for which `ok[source]`
    /// is true (the rows of any other are dropped): a shard that is still
    /// empty adopts its staged rows whole, any other upserts them in order.
    pub fn ingest_node_stage(&mut self, stage: NodeStage, ok: &[bool], now_us: u64, scan: u32) -> IngestStats {
        let land = |source: u32| ok.get(source as usize).copied().unwrap_or(false);
        let staged: Vec<StagedShard> = stage
            .shards
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
            .collect();
        self.nodes
            .par_iter_mut()
            .zip(staged)
            .map(|(shard, staged)| {
                if shard.is_empty() && shard.arena.is_empty() && staged.runs.iter().all(|r| land(r.source)) {
                    return shard.adopt(staged.rows, now_us, scan);
                }
                let mut stats = IngestStats::default();
                if shard.is_empty() {
                    // Size every column once.
                    let (rows, bytes) = staged.landing(&land).fold((0, 0), |(rows, bytes), n| {
                        (rows + 1, bytes + (n.id.len + n.tags.len + n.props.len) as usize)
                    });
                    shard.reserve(rows, bytes + bytes / 8);
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

    fn staged(sources: &[&NodeBatch]) -> NodeStage {
        let stage = NodeStage::new();
        for (k, b) in sources.iter().enumerate() {
            stage.add(k, b);
        }
        stage
    }

    #[test]
    fn a_first_scan_takes_the_staged_buffers_as_its_arenas_and_reads_as_upserts_would() {
        let i = Arc::new(Interner::new());
        // Two sources; 2000..3000 staged by both, the second with other properties.
        let (a, b) = (batch(&i, 0..3000, 0), batch(&i, 2000..5000, 1));
        let stage = staged(&[&a, &b]);
        assert_eq!(stage.len(), 6000);
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
        let mut g = Graph::new(i.clone());
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
        let upserted = h.ingest_nodes(&[a, b], 7, 1);
        assert_eq!(upserted, stats);
        assert_eq!(read(&g), read(&h));
        assert_eq!(g.node_rows(), 5000);
    }

    #[test]
    fn a_failed_sources_rows_land_nowhere_and_the_others_land_whole() {
        let i = Arc::new(Interner::new());
        let (a, failed, c) = (
            batch(&i, 0..2000, 0),
            batch(&i, 1000..4000, 1),
            batch(&i, 4000..4500, 2),
        );
        let mut g = Graph::new(i.clone());
        let stats = g.ingest_node_stage(staged(&[&a, &failed, &c]), &[true, false, true], 7, 1);
        assert_eq!((stats.inserted, stats.changed), (2500, 0));
        let mut h = Graph::new(i.clone());
        h.ingest_nodes(&[a, c], 7, 1);
        assert_eq!(read(&g), read(&h), "only the failed source's rows are missing");
        // A source index beyond the list does not land either.
        let mut g = Graph::new(i.clone());
        let stats = g.ingest_node_stage(staged(&[&batch(&i, 0..10, 0)]), &[], 7, 1);
        assert_eq!((stats.total(), g.node_rows()), (0, 0));
    }

    #[test]
    fn a_later_scan_upserts_the_staged_rows_into_the_rows_it_finds() {
        let i = Arc::new(Interner::new());
        let mut g = Graph::new(i.clone());
        let mut h = Graph::new(i.clone());
        g.ingest_node_stage(staged(&[&batch(&i, 0..3000, 0)]), &[true], 7, 1);
        h.ingest_nodes(&[batch(&i, 0..3000, 0)], 7, 1);
        // 0..1000 unchanged, 1000..3000 changed, 3000..3500 new.
        let later = [batch(&i, 0..1000, 0), batch(&i, 1000..3500, 5)];
        let stats = g.ingest_node_stage(staged(&[&later[0], &later[1]]), &[true, true], 9, 2);
        assert_eq!((stats.inserted, stats.changed, stats.unchanged), (500, 2000, 1000));
        assert_eq!(h.ingest_nodes(&later, 9, 2), stats);
        assert_eq!(read(&g), read(&h));
    }
}

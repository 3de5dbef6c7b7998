//! `graph.redb`: every version of every node and edge, as a log of segments.
//!
//! Each commit (one per scan) writes the changed node and edge versions,
//! grouped by shard into one value per shard: `(commit_us, part, shard) ->
//! records`. Now and then a commit writes a checkpoint instead: every current
//! row. The state as of any time T is the latest checkpoint at or before T
//! with the later deltas up to T replayed over it, shard by shard in
//! parallel; `graph at T` keeps the rows live at T (`valid_from <= T` and
//! `valid_to` 0 or later than T), and `diff` compares two such states.
//! A restart replays from the last checkpoint. Writing a shard's changes as
//! one value keeps a commit of a million new rows to a few hundred inserts.
//!
//! A checkpoint is written when there is none yet, or when the rows written
//! as deltas since the last one exceed [`CHECKPOINT_FACTOR`] times the rows
//! of the graph, so replay never reads more than that many times a full
//! state. The interner's table is stored alongside, so symbols in stored
//! rows keep their meaning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use thiserror::Error;

use crate::health::{Fault, Reopening};

use super::codec::{
    DecodeError, decode_edge_keyed, decode_node, edge_key_into, encode_edge_fields_into, encode_edge_value_into,
    encode_node_into, encoded_edge_fields_len, encoded_edge_value_len, encoded_node_len, relation_key_into,
};
use svc_graph::graph::{Changes, DirtyRows, EdgeVersion, Graph, NodeRow, NodeVersion};
use svc_graph::ids::NodeId;

mod past;

pub use past::{DiffCounts, GraphAtPage, Replayed, edge_order};

const SYMBOLS: TableDefinition<u32, &str> = TableDefinition::new("symbols");
/// `commit_us -> kind` (delta or checkpoint).
const COMMITS: TableDefinition<u64, u8> = TableDefinition::new("commits");
/// `(commit_us, part, shard) -> records`.
const SEGMENTS: TableDefinition<(u64, u8, u16), &[u8]> = TableDefinition::new("segments");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

const META_GENERATION: &str = "generation";
const META_SCAN_SEQ: &str = "scan_seq";
const META_OBSERVED: &str = "observed_s";
const META_LAST_COMMIT: &str = "last_commit_us";
const META_CHECKPOINT: &str = "checkpoint_us";
const META_DELTA_ROWS: &str = "delta_rows";

const KIND_DELTA: u8 = 0;
const KIND_CHECKPOINT: u8 = 1;
const PART_NODES: u8 = 0;
const PART_EDGES: u8 = 1;
/// The same parts, each segment LZ4-compressed behind its length (what
/// commits write; the plain parts are read from stores written before).
const PART_NODES_LZ4: u8 = 2;
const PART_EDGES_LZ4: u8 = 3;
/// Segments per part. Fixed forever: a row must land in the same segment shard in every commit.
const SEGMENT_SHARDS: u16 = 256;

/// A checkpoint is due when delta rows since the last one exceed this many times the graph's rows.
pub const CHECKPOINT_FACTOR: u64 = 4;

/// Memory redb may hold for this database's pages (its default is 1 GiB).
/// The graph lives in memory and is restored from its snapshot: this file
/// is written at each commit, in large segments, and read again only to
/// replay or to answer a question about the past, each a pass over the
/// segments. With the default, the pages each commit wrote stayed in
/// memory: a 1M-node daemon held ~600 MB more after five scans, and would
/// hold up to 1 GiB more. With 64 MiB a later scan's commit at 1M takes
/// ~80 ms more (~420 against ~340 ms), and `/graph/at` answers in the
/// same ~3 s (docs/perf-log.md, the notes on the daemon's resident memory).
const CACHE_BYTES: usize = 64 << 20;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot open graph store {path}: {cause}")]
    Open { path: PathBuf, cause: Box<redb::Error> },
    #[error("graph store {path}: {cause}")]
    Db { path: PathBuf, cause: Box<redb::Error> },
    /// The file failed (a full disk, an I/O error) and is not usable yet.
    #[error("graph store {0}")]
    Unavailable(Fault),
    #[error("graph store {path}: {what}: {cause}")]
    Corrupt {
        path: PathBuf,
        what: String,
        cause: DecodeError,
    },
}

/// Bookkeeping written with every commit.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitMeta {
    pub generation: u64,
    pub scan_seq: u64,
    pub commit_us: u64,
    /// Node and edge rows in the graph after this commit (for the checkpoint policy).
    pub rows: u64,
    /// When the committed estate was observed, Unix seconds (0: unknown).
    pub observed_s: u64,
}

/// Everything a restart needs.
#[derive(Debug, Default)]
pub struct Loaded {
    pub symbols: Vec<String>,
    pub nodes: Vec<NodeRow>,
    pub edges: Vec<EdgeVersion>,
    pub meta: CommitMeta,
}

/// The graph as it was at one time, nodes sorted by CRN.
#[derive(Debug, Default)]
pub struct GraphAt {
    pub nodes: Vec<NodeVersion>,
    pub edges: Vec<EdgeVersion>,
}

/// What changed between two times.
#[derive(Debug, Default)]
pub struct GraphDiff {
    pub added: Vec<NodeVersion>,
    pub removed: Vec<NodeVersion>,
    /// `(before, after)`.
    pub changed: Vec<(NodeVersion, NodeVersion)>,
    pub edges_added: Vec<EdgeVersion>,
    pub edges_removed: Vec<EdgeVersion>,
    /// `(before, after)`.
    pub edges_changed: Vec<(EdgeVersion, EdgeVersion)>,
}

/// Size of the store's history.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub commits: u64,
    pub checkpoints: u64,
    pub segments: u64,
    /// Rows written as deltas since the last checkpoint.
    pub delta_rows: u64,
}

pub struct GraphStore {
    /// Opened again after an I/O failure ([`crate::health`]).
    db: Arc<Reopening>,
    path: PathBuf,
    /// Whole states replayed to answer questions about the past.
    replays: past::Replays,
}

fn live_at(valid_from: u64, valid_to: u64, ts: u64) -> bool {
    valid_from <= ts && (valid_to == 0 || valid_to > ts)
}

/// A key's segment shard is its FNV-1a hash modulo [`SEGMENT_SHARDS`]:
/// stable across versions, so a key's segment shard never moves.
fn segment_shard(key: &[u8]) -> u16 {
    shard_of(fnv(FNV_START, key))
}

/// FNV-1a's state before any byte.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a's state after `bytes`, from state `h`: a key's hash can be
/// carried on from the hash of its first part.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn shard_of(hash: u64) -> u16 {
    (hash % u64::from(SEGMENT_SHARDS)) as u16
}

/// [`fnv`] of each `(state, bytes)`, the state replaced by the result. Four
/// at a time: one hash is a chain of dependent multiplies, four are
/// independent chains the processor runs side by side.
fn fnv_all(jobs: &mut [(u64, &[u8])]) {
    let mut quads = jobs.chunks_exact_mut(4);
    for q in &mut quads {
        let n = q.iter().map(|(_, b)| b.len()).min().unwrap_or(0);
        let mut h = [q[0].0, q[1].0, q[2].0, q[3].0];
        for (((a, b), c), d) in q[0].1[..n].iter().zip(&q[1].1[..n]).zip(&q[2].1[..n]).zip(&q[3].1[..n]) {
            h[0] = (h[0] ^ u64::from(*a)).wrapping_mul(FNV_PRIME);
            h[1] = (h[1] ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
            h[2] = (h[2] ^ u64::from(*c)).wrapping_mul(FNV_PRIME);
            h[3] = (h[3] ^ u64::from(*d)).wrapping_mul(FNV_PRIME);
        }
        for (job, h) in q.iter_mut().zip(h) {
            job.0 = fnv(h, &job.1[n..]);
        }
    }
    for job in quads.into_remainder() {
        job.0 = fnv(job.0, job.1);
    }
}

/// Iterates `(key, value)` records; `Err` at the first malformed one.
fn records(mut buf: &[u8]) -> impl Iterator<Item = Result<(&[u8], &[u8]), DecodeError>> {
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let mut take = |what: &'static str| -> Result<&[u8], DecodeError> {
            let len_bytes = buf.get(..4).ok_or(DecodeError(what))?;
            let len = u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
            let body = buf.get(4..4 + len).ok_or(DecodeError(what))?;
            buf = &buf[4 + len..];
            Ok(body)
        };
        let item = take("record key").and_then(|k| Ok((k, take("record value")?)));
        if item.is_err() {
            buf = &[];
        }
        Some(item)
    })
}

/// A segment as stored: LZ4 behind its length (u32 LE).
fn compress(segment: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress_prepend_size(segment)
}

/// The segment [`compress`] stored. A length LZ4 could not have come from
/// (it expands at most 255 times) is refused before anything is allocated.
fn decompress(stored: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let bad = DecodeError("compressed segment");
    let (len, body) = stored.split_first_chunk::<4>().ok_or(bad)?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > body.len().saturating_mul(255).saturating_add(16) {
        return Err(DecodeError("compressed segment length"));
    }
    let out = lz4_flex::block::decompress(body, len).map_err(|_| DecodeError("compressed segment"))?;
    if out.len() != len {
        return Err(DecodeError("compressed segment length"));
    }
    Ok(out)
}

/// A stored segment's records, decompressed when it was written compressed.
fn plain(stored: &(bool, Vec<u8>)) -> Result<std::borrow::Cow<'_, [u8]>, DecodeError> {
    match stored {
        (true, bytes) => decompress(bytes).map(std::borrow::Cow::Owned),
        (false, bytes) => Ok(std::borrow::Cow::Borrowed(bytes.as_slice())),
    }
}

/// A run's records, each as (segment shard, length), and its bytes per shard.
type RunPlacement = (Vec<(u16, u32)>, Vec<usize>);

/// Groups versions into per-shard record buffers, each allocated at its
/// size. `place` pushes the segment shard and key length of each item of a
/// run, in order; `key` and `value` write an item's key and value,
/// `value_len` is its value's length.
///
/// Items are read in their own order, twice: once for each record's shard
/// and length, once to write it. The items are cut into runs and each run
/// owns, in every shard's buffer, the piece its records fill, so a run's
/// worker writes them in item order with no other worker in that piece:
/// reads stay sequential over the rows (which are scattered over the shards)
/// and each shard's buffer still holds its records in item order.
fn segments<T: Sync>(
    items: &[T],
    place: impl Fn(&[T], &mut Vec<(u16, u32)>) + Sync,
    key: impl Fn(&T, &mut Vec<u8>) + Sync,
    value: impl Fn(&T, &mut Vec<u8>) + Sync,
    value_len: impl Fn(&T) -> usize + Sync,
) -> Vec<Vec<u8>> {
    let shards = SEGMENT_SHARDS as usize;
    let run_len = items.len().div_ceil(4 * rayon::current_num_threads()).max(4096);
    // Each item's segment shard, from its key, and its record's length;
    // each run's bytes per shard.
    let placed: Vec<RunPlacement> = items
        .par_chunks(run_len)
        .map(|run| {
            let (mut placed, mut size) = (Vec::with_capacity(run.len()), vec![0usize; shards]);
            place(run, &mut placed);
            for (item, (shard, len)) in run.iter().zip(&mut placed) {
                *len += (8 + value_len(item)) as u32;
                size[usize::from(*shard)] += *len as usize;
            }
            (placed, size)
        })
        .collect();
    let mut out: Vec<Vec<u8>> = (0..shards)
        .map(|s| vec![0u8; placed.iter().map(|(_, size)| size[s]).sum()])
        .collect();
    // Per run, its piece of every shard's buffer.
    let mut pieces: Vec<Vec<&mut [u8]>> = placed.iter().map(|_| Vec::with_capacity(shards)).collect();
    for (s, buf) in out.iter_mut().enumerate() {
        let mut rest = buf.as_mut_slice();
        for ((_, size), piece) in placed.iter().zip(&mut pieces) {
            let (mine, after) = rest.split_at_mut(size[s]);
            piece.push(mine);
            rest = after;
        }
    }
    pieces
        .into_par_iter()
        .zip(items.par_chunks(run_len))
        .zip(&placed)
        .for_each(|((mut piece, run), (placed, _))| {
            let (mut k, mut v) = (Vec::new(), Vec::new());
            for (item, &(shard, len)) in run.iter().zip(placed) {
                k.clear();
                v.clear();
                key(item, &mut k);
                value(item, &mut v);
                let dst = std::mem::take(&mut piece[usize::from(shard)]);
                let (record, rest) = dst.split_at_mut(len as usize);
                write_record(record, &k, &v);
                piece[usize::from(shard)] = rest;
            }
        });
    out
}

/// A `place` for [`segments`] from each item's key, written into a scratch
/// buffer and hashed.
fn by_key<T>(key: impl Fn(&T, &mut Vec<u8>)) -> impl Fn(&[T], &mut Vec<(u16, u32)>) {
    move |run, placed| {
        let mut k = Vec::new();
        placed.extend(run.iter().map(|item| {
            k.clear();
            key(item, &mut k);
            (segment_shard(&k), k.len() as u32)
        }));
    }
}

/// A record: key length, key, value length, value (lengths `u32` little
/// endian), into a slice of exactly its length.
fn write_record(dst: &mut [u8], key: &[u8], value: &[u8]) {
    let (klen, rest) = dst.split_at_mut(4);
    klen.copy_from_slice(&(key.len() as u32).to_le_bytes());
    let (k, rest) = rest.split_at_mut(key.len());
    k.copy_from_slice(key);
    let (vlen, v) = rest.split_at_mut(4);
    vlen.copy_from_slice(&(value.len() as u32).to_le_bytes());
    v.copy_from_slice(value);
}

/// What a commit writes: node and edge versions, as segments.
pub trait Versions: Sync {
    /// How many node and edge versions.
    fn counts(&self) -> (usize, usize);
    /// The node and the edge segments, by segment shard, uncompressed.
    fn segments(&self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>);
}

impl Versions for Changes {
    fn counts(&self) -> (usize, usize) {
        (self.nodes.len(), self.edges.len())
    }

    fn segments(&self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        rayon::join(
            || {
                segments(
                    &self.nodes,
                    by_key(|n: &NodeVersion, k| k.extend_from_slice(n.crn.as_bytes())),
                    |n, k| k.extend_from_slice(n.crn.as_bytes()),
                    |n, v| encode_node_into(&n.row, v),
                    |n| encoded_node_len(&n.row),
                )
            },
            || {
                segments(
                    &self.edges,
                    by_key(edge_key_into),
                    edge_key_into,
                    encode_edge_value_into,
                    encoded_edge_value_len,
                )
            },
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

    fn segments(&self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
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
            crn(shard.src[r], k);
            relation_key_into(shard.rel[r], k);
            crn(shard.dst[r], k);
        };
        // A key's shard and length come from the table's hashes where it
        // has them (without writing the key), else from the key written out.
        rayon::join(
            || {
                segments(
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
                    node_key,
                    |&(s, r), v| crate::codec::encode_fields_into(&g.node_shards()[s as usize].fields(r), v),
                    |&(s, r)| crate::codec::encoded_fields_len(&g.node_shards()[s as usize].fields(r)),
                )
            },
            || {
                segments(
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
                            match (t.get(shard.src[r]), t.get(shard.dst[r])) {
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
                    edge_key,
                    |e, v| {
                        let (shard, r) = edge(e);
                        encode_edge_fields_into(&shard.fields(r as u32), v);
                    },
                    |e| {
                        let (shard, r) = edge(e);
                        encoded_edge_fields_len(&shard.fields(r as u32))
                    },
                )
            },
        )
    }
}

impl GraphStore {
    /// Opens or creates the store. A file that is not a readable redb
    /// database is an error naming the path, never replaced.
    pub fn open(path: &Path) -> Result<GraphStore, StoreError> {
        GraphStore::open_with_cache(path, CACHE_BYTES)
    }

    /// [`GraphStore::open`], redb holding at most `cache_bytes` of its pages.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<GraphStore, StoreError> {
        let open_err = |e: redb::Error| StoreError::Open {
            path: path.to_owned(),
            cause: Box::new(e),
        };
        let open = move |p: &Path| {
            Database::builder()
                .set_cache_size(cache_bytes)
                .create(p)
                .map_err(redb::Error::from)
        };
        let db = open(path).map_err(open_err)?;
        GraphStore::on(db, path, open)
    }

    /// The store over an open database (`path` names it in errors);
    /// `reopen` opens it again after an I/O failure ([`crate::health`]).
    pub fn on(
        db: Database,
        path: &Path,
        reopen: impl Fn(&Path) -> Result<Database, redb::Error> + Send + Sync + 'static,
    ) -> Result<GraphStore, StoreError> {
        let db = Reopening::new(db, path, reopen);
        let open_err = |e: redb::Error| StoreError::Open {
            path: path.to_owned(),
            cause: Box::new(e),
        };
        let store = GraphStore {
            db: Arc::new(db),
            path: path.to_owned(),
            replays: past::Replays::default(),
        };
        let db = store.database()?;
        let txn = db.begin_write().map_err(|e| open_err(e.into()))?;
        {
            txn.open_table(SYMBOLS).map_err(|e| open_err(e.into()))?;
            txn.open_table(COMMITS).map_err(|e| open_err(e.into()))?;
            txn.open_table(SEGMENTS).map_err(|e| open_err(e.into()))?;
            txn.open_table(META).map_err(|e| open_err(e.into()))?;
        }
        txn.commit().map_err(|e| open_err(e.into()))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database, for the other tables kept in `graph.redb` (`signal_store`);
    /// [`StoreError::Unavailable`] while a failed file cannot be opened again.
    /// Route every error of its use through [`GraphStore::db_err`], which
    /// notices I/O failures.
    pub fn database(&self) -> Result<Arc<Database>, StoreError> {
        self.db.get().map_err(StoreError::Unavailable)
    }

    /// Opens the file again now if it failed (without waiting for the
    /// retry interval) and makes an empty durable commit: whether the store
    /// can be written. A health check's probe.
    pub fn probe(&self) -> Result<(), StoreError> {
        let (db, generation) = self.db.recover().map_err(StoreError::Unavailable)?;
        let err = self.db_err();
        let mut txn = db.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        txn.commit().map_err(|e| err(e.into()))?;
        self.db.wrote(generation);
        Ok(())
    }

    /// Why the store cannot be used now, if it failed and is not open again.
    pub fn fault(&self) -> Option<Fault> {
        self.db.fault()
    }

    /// Makes every earlier write durable (an empty durable commit).
    pub fn sync(&self) -> Result<(), StoreError> {
        let err = self.db_err();
        let mut txn = self.database()?.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        txn.commit().map_err(|e| err(e.into()))?;
        Ok(())
    }

    /// Maps an error of this database, recording an I/O failure (the file
    /// is then opened again on next use).
    pub fn db_err(&self) -> impl Fn(redb::Error) -> StoreError + Send + 'static {
        let (db, path) = (Arc::clone(&self.db), self.path.clone());
        // The database the caller is about to use: an error of one dropped
        // since (opened again meanwhile) does not drop the new one.
        let generation = db.generation();
        move |e| match db.observe_at(generation, &e) {
            Some(fault) => StoreError::Unavailable(fault),
            None => StoreError::Db {
                path: path.clone(),
                cause: Box::new(e),
            },
        }
    }

    fn corrupt(&self, what: String, source: DecodeError) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            what,
            cause: source,
        }
    }

    /// The bookkeeping of the last commit (`rows` 0).
    pub fn commit_meta(&self) -> Result<CommitMeta, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let meta = txn.open_table(META).map_err(|e| err(e.into()))?;
        let get = |k: &str| -> Result<u64, StoreError> {
            Ok(meta.get(k).map_err(|e| err(e.into()))?.map(|v| v.value()).unwrap_or(0))
        };
        Ok(CommitMeta {
            generation: get(META_GENERATION)?,
            scan_seq: get(META_SCAN_SEQ)?,
            commit_us: get(META_LAST_COMMIT)?,
            rows: 0,
            observed_s: get(META_OBSERVED)?,
        })
    }

    /// Loads the symbol table and the bookkeeping of the last commit.
    pub fn load_meta(&self) -> Result<(Vec<String>, CommitMeta), StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let mut symbols_out = Vec::new();
        let symbols = txn.open_table(SYMBOLS).map_err(|e| err(e.into()))?;
        for (i, item) in symbols.iter().map_err(|e| err(e.into()))?.enumerate() {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            if k.value() as usize != i {
                return Err(self.corrupt("symbol table".into(), DecodeError("symbol table has a gap")));
            }
            symbols_out.push(v.value().to_owned());
        }
        drop(symbols);
        drop(txn);
        let meta = self.commit_meta()?;
        Ok((symbols_out, meta))
    }

    /// Loads the symbol table and the latest version of every node and edge.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let (symbols, meta) = self.load_meta()?;
        let state = self.state_as_of(u64::MAX)?;
        let nodes: Vec<NodeRow> = state.nodes.into_iter().map(|n| n.row).collect();
        let rows = (nodes.len() + state.edges.len()) as u64;
        Ok(Loaded {
            symbols,
            nodes,
            edges: state.edges,
            meta: CommitMeta { rows, ..meta },
        })
    }

    /// Writes new symbols (table positions from `symbols_start`), the
    /// changed versions (or, when due, a checkpoint of every row, which
    /// `full` produces) and the bookkeeping in one durable transaction.
    /// Returns the commit's time key (`meta.commit_us`, moved past the
    /// previous commit if the clock did not advance).
    pub fn commit<V: Versions, F: Versions>(
        &self,
        symbols_start: usize,
        symbols: &[Arc<str>],
        changes: &V,
        full: impl FnOnce() -> F,
        meta: CommitMeta,
    ) -> Result<u64, StoreError> {
        let err = self.db_err();
        // The bookkeeping is read before the write transaction (only
        // commits change it, and they do not overlap), so the segments are
        // encoded while an earlier write of this database (a remediation
        // pass's) may still be finishing.
        let (last, checkpoint, delta_rows) = {
            let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
            match txn.open_table(META) {
                Ok(m) => {
                    let get = |k: &str| -> Result<u64, StoreError> {
                        Ok(m.get(k).map_err(|e| err(e.into()))?.map(|v| v.value()).unwrap_or(0))
                    };
                    (get(META_LAST_COMMIT)?, get(META_CHECKPOINT)?, get(META_DELTA_ROWS)?)
                }
                Err(redb::TableError::TableDoesNotExist(_)) => (0, 0, 0),
                Err(e) => return Err(err(e.into())),
            }
        };
        let (nodes, edges) = changes.counts();
        let changed = (nodes + edges) as u64;
        let delta_rows = delta_rows + changed;
        // Commit keys must increase even if the clock did not.
        let commit_us = meta.commit_us.max(last + 1);
        let due = checkpoint == 0 || delta_rows > CHECKPOINT_FACTOR * meta.rows.max(1);
        let kind = if due { KIND_CHECKPOINT } else { KIND_DELTA };
        let segments = (due || changed > 0).then(|| {
            // When every row changed (a first scan), the changes are the checkpoint.
            if due && changed != meta.rows {
                full().segments()
            } else {
                changes.segments()
            }
        });

        let mut txn = self.database()?.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        {
            let mut sym = txn.open_table(SYMBOLS).map_err(|e| err(e.into()))?;
            for (i, s) in symbols.iter().enumerate() {
                sym.insert((symbols_start + i) as u32, &**s)
                    .map_err(|e| err(e.into()))?;
            }
            if let Some((nodes, edges)) = segments {
                // Compressed on every core (a first scan's ~870 MB at 1M
                // nodes is written and synced as about a third of that),
                // each inserted as soon as it is.
                let mut seg = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
                let (tx, rx) = std::sync::mpsc::sync_channel::<(u8, u16, Vec<u8>)>(64);
                std::thread::scope(|scope| -> Result<(), StoreError> {
                    scope.spawn(move || {
                        let all = [(PART_NODES_LZ4, nodes), (PART_EDGES_LZ4, edges)];
                        let parts: Vec<(u8, u16, Vec<u8>)> = all
                            .into_iter()
                            .flat_map(|(part, shards)| {
                                shards.into_iter().enumerate().map(move |(s, b)| (part, s as u16, b))
                            })
                            .filter(|(_, _, b)| !b.is_empty())
                            .collect();
                        parts.into_par_iter().for_each_with(tx, |tx, (part, shard, bytes)| {
                            // The receiver stops early only on an error,
                            // which it reports.
                            let _ = tx.send((part, shard, compress(&bytes)));
                        });
                    });
                    for (part, shard, bytes) in rx {
                        seg.insert((commit_us, part, shard), bytes.as_slice())
                            .map_err(|e| err(e.into()))?;
                    }
                    Ok(())
                })?;
                drop(seg);
                txn.open_table(COMMITS)
                    .map_err(|e| err(e.into()))?
                    .insert(commit_us, kind)
                    .map_err(|e| err(e.into()))?;
            }
            let mut m = txn.open_table(META).map_err(|e| err(e.into()))?;
            if due {
                m.insert(META_CHECKPOINT, commit_us).map_err(|e| err(e.into()))?;
                m.insert(META_DELTA_ROWS, 0).map_err(|e| err(e.into()))?;
            } else {
                m.insert(META_DELTA_ROWS, delta_rows).map_err(|e| err(e.into()))?;
            }
            m.insert(META_GENERATION, meta.generation).map_err(|e| err(e.into()))?;
            m.insert(META_SCAN_SEQ, meta.scan_seq).map_err(|e| err(e.into()))?;
            m.insert(META_OBSERVED, meta.observed_s).map_err(|e| err(e.into()))?;
            m.insert(META_LAST_COMMIT, commit_us).map_err(|e| err(e.into()))?;
        }
        txn.commit().map_err(|e| err(e.into()))?;
        self.db.wrote(self.db.generation());
        Ok(commit_us)
    }

    /// Every row as of `ts_us` (the latest version of each written at or
    /// before it, live or not), nodes sorted by CRN.
    fn state_as_of(&self, ts_us: u64) -> Result<GraphAt, StoreError> {
        let started = std::time::Instant::now();
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
        let mut start = None;
        for item in commits.range(..=ts_us).map_err(|e| err(e.into()))?.rev() {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            if v.value() == KIND_CHECKPOINT {
                start = Some(k.value());
                break;
            }
        }
        let Some(start) = start else {
            return Ok(GraphAt::default());
        };
        // Segment values per (part, shard), in commit order.
        let mut parts: Vec<Vec<(bool, Vec<u8>)>> = vec![Vec::new(); 2 * SEGMENT_SHARDS as usize];
        let seg = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
        for item in seg
            .range((start, 0u8, 0u16)..=(ts_us, u8::MAX, u16::MAX))
            .map_err(|e| err(e.into()))?
        {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            let (_, part, shard) = k.value();
            let (part, compressed) = match part {
                PART_NODES | PART_EDGES => (part, false),
                PART_NODES_LZ4 => (PART_NODES, true),
                PART_EDGES_LZ4 => (PART_EDGES, true),
                _ => return Err(self.corrupt("segment key".into(), DecodeError("segment key out of range"))),
            };
            if shard >= SEGMENT_SHARDS {
                return Err(self.corrupt("segment key".into(), DecodeError("segment key out of range")));
            }
            parts[usize::from(part) * SEGMENT_SHARDS as usize + usize::from(shard)]
                .push((compressed, v.value().to_vec()));
        }
        drop(seg);
        drop(txn);
        let read_ms = started.elapsed().as_millis() as u64;
        let node_parts = &parts[..SEGMENT_SHARDS as usize];
        let edge_parts = &parts[SEGMENT_SHARDS as usize..];
        let (nodes, edges) = rayon::join(
            || {
                node_parts
                    .par_iter()
                    .map(|segs| {
                        let segs = segs.iter().map(plain).collect::<Result<Vec<_>, _>>()?;
                        replay(&segs)?
                            .into_iter()
                            .map(|(k, v)| {
                                let crn = String::from_utf8(k.to_vec()).map_err(|_| DecodeError("node key"))?;
                                Ok(NodeVersion {
                                    crn,
                                    row: decode_node(v)?,
                                })
                            })
                            .collect::<Result<Vec<_>, DecodeError>>()
                    })
                    .collect::<Result<Vec<_>, DecodeError>>()
            },
            || {
                edge_parts
                    .par_iter()
                    .map(|segs| {
                        let segs = segs.iter().map(plain).collect::<Result<Vec<_>, _>>()?;
                        replay(&segs)?
                            .into_iter()
                            .map(|(k, v)| decode_edge_keyed(k, v))
                            .collect::<Result<Vec<_>, DecodeError>>()
                    })
                    .collect::<Result<Vec<_>, DecodeError>>()
            },
        );
        let mut nodes: Vec<NodeVersion> = nodes
            .map_err(|e| self.corrupt("node segment".into(), e))?
            .into_iter()
            .flatten()
            .collect();
        nodes.par_sort_unstable_by(|a, b| a.crn.cmp(&b.crn));
        let edges: Vec<EdgeVersion> = edges
            .map_err(|e| self.corrupt("edge segment".into(), e))?
            .into_iter()
            .flatten()
            .collect();
        tracing::debug!(
            read_ms,
            decode_ms = started.elapsed().as_millis() as u64 - read_ms,
            nodes = nodes.len(),
            edges = edges.len(),
            "graph state replayed"
        );
        Ok(GraphAt { nodes, edges })
    }

    /// Commits, checkpoints and segments stored.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let mut st = StoreStats::default();
        for item in txn
            .open_table(COMMITS)
            .map_err(|e| err(e.into()))?
            .iter()
            .map_err(|e| err(e.into()))?
        {
            let (_, v) = item.map_err(|e| err(e.into()))?;
            st.commits += 1;
            st.checkpoints += u64::from(v.value() == KIND_CHECKPOINT);
        }
        use redb::ReadableTableMetadata;
        st.segments = txn
            .open_table(SEGMENTS)
            .map_err(|e| err(e.into()))?
            .len()
            .map_err(|e| err(e.into()))?;
        st.delta_rows = txn
            .open_table(META)
            .map_err(|e| err(e.into()))?
            .get(META_DELTA_ROWS)
            .map_err(|e| err(e.into()))?
            .map(|v| v.value())
            .unwrap_or(0);
        Ok(st)
    }
}

/// Replays segments in order: the last record of each key wins.
fn replay<S: AsRef<[u8]>>(segs: &[S]) -> Result<HashMap<&[u8], &[u8]>, DecodeError> {
    let mut map: HashMap<&[u8], &[u8]> = HashMap::new();
    for seg in segs.iter().map(AsRef::as_ref) {
        for rec in records(seg) {
            let (k, v) = rec?;
            map.insert(k, v);
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::codec::{edge_key, encode_edge_value, encode_node};
    use svc_graph::fixture::Estate;
    use svc_graph::graph::Graph;
    use svc_graph::intern::Interner;
    use svc_graph::relation::Relation;

    /// Four hashes side by side equal each worked out alone (whatever the
    /// lengths), and a hash carries on from its key's first part.
    #[test]
    fn hashes_four_at_a_time_equal_one_at_a_time() {
        let texts: Vec<Vec<u8>> = (0..11)
            .map(|n| (0..n * 7 % 23).map(|b| b as u8 ^ 0x5a).collect())
            .collect();
        let mut jobs: Vec<(u64, &[u8])> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (FNV_START ^ i as u64, &t[..]))
            .collect();
        let expected: Vec<u64> = jobs.iter().map(|(h, t)| fnv(*h, t)).collect();
        fnv_all(&mut jobs);
        assert_eq!(jobs.iter().map(|(h, _)| *h).collect::<Vec<_>>(), expected);
        assert_eq!(
            segment_shard(b"crn:svc:aws"),
            shard_of(fnv(fnv(FNV_START, b"crn:"), b"svc:aws"))
        );
    }

    /// The segments built in parallel hold exactly the records a single
    /// pass in item order writes: same shards, same order, same bytes.
    #[test]
    fn segments_built_in_parallel_equal_one_pass_in_item_order() {
        let interner = Arc::new(Interner::new());
        let mut e = Estate::new(interner.clone());
        let crn = |n: usize| format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
        for n in 0..20_000 {
            e.node(&crn(n), if n % 3 == 0 { "available" } else { "in-use" }, n as f32);
        }
        for n in 1..20_000 {
            e.edge(&crn(n), &crn(n / 2), Relation::AttachedTo);
        }
        let mut g = Graph::new(interner);
        e.scan_into(&mut g, 1, 1);
        let all = g.all_versions();
        assert_eq!((all.nodes.len(), all.edges.len()), (20_000, 19_999));

        let one_pass = |records: Vec<(Vec<u8>, Vec<u8>)>| {
            let mut out = vec![Vec::new(); SEGMENT_SHARDS as usize];
            for (k, v) in records {
                let out = &mut out[segment_shard(&k) as usize];
                let at = out.len();
                out.resize(at + 8 + k.len() + v.len(), 0);
                write_record(&mut out[at..], &k, &v);
            }
            out
        };
        let nodes = one_pass(
            all.nodes
                .iter()
                .map(|n| (n.crn.as_bytes().to_vec(), encode_node(&n.row)))
                .collect(),
        );
        let edges = one_pass(
            all.edges
                .iter()
                .map(|e| (edge_key(e).into_bytes(), encode_edge_value(e)))
                .collect(),
        );
        let (parallel_nodes, parallel_edges) = all.segments();
        assert_eq!(parallel_nodes, nodes);
        assert_eq!(parallel_edges, edges);
        // Each buffer was allocated at its size: the lengths are exact.
        for n in &all.nodes {
            assert_eq!(encoded_node_len(&n.row), encode_node(&n.row).len());
        }
        for e in &all.edges {
            assert_eq!(encoded_edge_value_len(e), encode_edge_value(e).len());
        }
        assert!(
            parallel_nodes
                .iter()
                .chain(&parallel_edges)
                .all(|s| s.len() == s.capacity())
        );
        // Every shard is used and every record reads back.
        assert!(nodes.iter().all(|s| !s.is_empty()));
        let records: usize = parallel_nodes.iter().map(|s| records(s).count()).sum();
        assert_eq!(records, 20_000);
    }

    /// Commits the estate of `e` (nodes `vol-0..n`, each attached to the
    /// one at half its number) at `now`, with `state` on every third node.
    pub(super) fn scan(store: &GraphStore, g: &mut Graph, now: u64, seq: u64, n: usize, state: &str) {
        let crn = |n: usize| format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
        let mut e = Estate::new(g.interner().clone());
        for i in 0..n {
            e.node(&crn(i), if i % 3 == 0 { state } else { "in-use" }, i as f32);
        }
        for i in 1..n {
            e.edge(&crn(i), &crn(i / 2), Relation::AttachedTo);
        }
        e.scan_into(g, now, seq as u32);
        let aws = g.interner().intern("aws");
        g.retire_unseen(&[aws], now, seq as u32);
        let changes = g.take_changes();
        let persisted = store.load_meta().map(|(symbols, _)| symbols.len()).unwrap_or(0);
        let fresh = g.interner().strings_from(persisted);
        let meta = CommitMeta {
            generation: g.generation(),
            scan_seq: seq,
            commit_us: now,
            rows: (g.node_rows() + g.edge_rows()) as u64,
            observed_s: 0,
        };
        store
            .commit(persisted, &fresh, &changes, || g.all_versions(), meta)
            .unwrap();
    }

    /// redb keeps no more of the store's pages in memory than the cache it
    /// was given, however much the commits write (with redb's default,
    /// every page a commit wrote stayed in memory, up to 1 GiB).
    #[test]
    fn the_store_holds_no_more_pages_in_memory_than_its_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.redb");
        let cache = 256 << 10;
        let store = GraphStore::open_with_cache(&path, cache).unwrap();
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(&store, &mut g, 100, 1, 20_000, "available");
        scan(&store, &mut g, 200, 2, 20_000, "stopped");
        let written = std::fs::metadata(&path).unwrap().len();
        assert!(written > 4 * cache as u64, "the commits wrote {written} bytes");
        let used = store.database().unwrap().cache_stats().used_bytes();
        assert!(
            used > 0 && used <= cache,
            "{used} bytes cached against a cache of {cache}"
        );
    }

    /// Rewrites every compressed segment as the plain one a store written
    /// before compression holds.
    fn decompress_all(store: &GraphStore) {
        let txn = store.database().unwrap().begin_write().unwrap();
        {
            let mut seg = txn.open_table(SEGMENTS).unwrap();
            let stored: Vec<((u64, u8, u16), Vec<u8>)> = seg
                .iter()
                .unwrap()
                .map(|item| {
                    let (k, v) = item.unwrap();
                    (k.value(), v.value().to_vec())
                })
                .collect();
            for ((ts, part, shard), bytes) in stored {
                if part >= PART_NODES_LZ4 {
                    seg.remove((ts, part, shard)).unwrap();
                    seg.insert(
                        (ts, part - PART_NODES_LZ4, shard),
                        decompress(&bytes).unwrap().as_slice(),
                    )
                    .unwrap();
                }
            }
        }
        txn.commit().unwrap();
    }

    fn sorted(mut at: GraphAt) -> GraphAt {
        at.nodes.sort_by(|a, b| a.crn.cmp(&b.crn));
        at.edges.sort_by_key(edge_key);
        at
    }

    /// A store whose first commit was written before segments were
    /// compressed reads as it did, and later compressed commits replay on
    /// top of it: every time answers as in a store written compressed
    /// throughout.
    #[test]
    fn a_store_written_before_compression_reads_the_same_and_takes_compressed_commits() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (
            GraphStore::open(&dir.path().join("old.redb")).unwrap(),
            GraphStore::open(&dir.path().join("new.redb")).unwrap(),
        );
        let (mut g_old, mut g_new) = (
            Graph::new(Arc::new(Interner::new())),
            Graph::new(Arc::new(Interner::new())),
        );
        scan(&old, &mut g_old, 100, 1, 3000, "available");
        decompress_all(&old);
        scan(&new, &mut g_new, 100, 1, 3000, "available");
        // Two later scans: a third of the nodes change state, then a tenth go.
        for (g, store) in [(&mut g_old, &old), (&mut g_new, &new)] {
            scan(store, g, 200, 2, 3000, "stopped");
            scan(store, g, 300, 3, 2700, "stopped");
        }
        let plain_parts = {
            let txn = old.database().unwrap().begin_read().unwrap();
            let seg = txn.open_table(SEGMENTS).unwrap();
            let parts: Vec<u8> = seg.iter().unwrap().map(|item| item.unwrap().0.value().1).collect();
            parts
        };
        assert!(plain_parts.contains(&PART_NODES) && plain_parts.contains(&PART_EDGES_LZ4));
        for ts in [100, 150, 200, 250, 300, u64::MAX] {
            let (a, b) = (sorted(old.graph_at(ts).unwrap()), sorted(new.graph_at(ts).unwrap()));
            assert_eq!(a.nodes, b.nodes, "nodes at {ts}");
            assert_eq!(a.edges, b.edges, "edges at {ts}");
        }
        let now = new.graph_at(300).unwrap();
        assert_eq!((now.nodes.len(), now.edges.len()), (2700, 2699));
        let at = new.graph_at(150).unwrap();
        assert_eq!(at.nodes.len(), 3000);
        let i = Interner::from_strings(new.load().unwrap().symbols).unwrap();
        let available = at
            .nodes
            .iter()
            .filter(|n| &*i.resolve(n.row.state) == "available")
            .count();
        assert_eq!(available, 1000);
    }

    /// A compressed segment that does not decompress, or that claims more
    /// bytes than LZ4 could give, is reported as corruption naming the
    /// store: nothing panics and nothing is allocated for the claim.
    #[test]
    fn a_damaged_compressed_segment_is_reported_as_corruption() {
        let mut huge = u32::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(b"tiny");
        let mut junk = 4000u32.to_le_bytes().to_vec();
        junk.extend_from_slice(&[0xf0; 64]);
        for damage in [huge, junk, vec![1, 2]] {
            let dir = tempfile::tempdir().unwrap();
            let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
            let mut g = Graph::new(Arc::new(Interner::new()));
            scan(&store, &mut g, 100, 1, 500, "available");
            let txn = store.database().unwrap().begin_write().unwrap();
            {
                let mut seg = txn.open_table(SEGMENTS).unwrap();
                let first = seg.first().unwrap().unwrap().0.value();
                assert_eq!(first.1, PART_NODES_LZ4);
                seg.insert(first, damage.as_slice()).unwrap();
            }
            txn.commit().unwrap();
            match store.graph_at(u64::MAX) {
                Err(StoreError::Corrupt { what, .. }) => assert_eq!(what, "node segment"),
                Err(other) => panic!("expected corruption, got {other}"),
                Ok(_) => panic!("a damaged segment must not read"),
            }
        }
    }

    /// Rows encoded straight from the shards give the segments their owned
    /// versions give: every row (a checkpoint), and the rows a later scan
    /// changed, waste verdicts and reasons included.
    #[test]
    fn versions_read_from_the_graph_encode_as_their_owned_copies() {
        use svc_graph::graph::Verdict;
        let dir = tempfile::tempdir().unwrap();
        let store = GraphStore::open(&dir.path().join("graph.redb")).unwrap();
        let mut g = Graph::new(Arc::new(Interner::new()));
        scan(&store, &mut g, 100, 1, 3000, "available");
        let rule = g.interner().intern("unattached-volume");
        let ids: Vec<NodeId> = g.nodes().map(|n| n.id()).step_by(7).collect();
        for id in &ids {
            let verdict = Verdict {
                is_waste: true,
                reason: "unattached for 43 days, 500 GiB gp2, $40.00/mo",
                rule: Some(rule),
            };
            g.set_verdict(*id, &verdict, 150);
        }
        let crn = |n: usize| format!("crn:svc:aws:us-east-1:ec2:volume:123456789012:vol-{n}");
        let mut e = Estate::new(g.interner().clone());
        for i in 0..2900 {
            e.node(&crn(i), if i % 5 == 0 { "stopped" } else { "in-use" }, i as f32);
        }
        for i in 1..2900 {
            e.edge(&crn(i), &crn(i / 3), Relation::Uses);
        }
        e.scan_into(&mut g, 200, 2);
        let aws = g.interner().intern("aws");
        g.retire_unseen(&[aws], 200, 2);

        let rows = g.take_dirty_rows();
        let (nodes, edges) = rows.counts();
        assert!(nodes > 100 && edges > 100 && nodes < g.node_rows());
        let owned = g.versions(&rows);
        let read = GraphVersions { graph: &g, rows };
        assert_eq!(read.counts(), owned.counts());
        assert_eq!(read.segments(), owned.segments());
        let all = GraphVersions {
            graph: &g,
            rows: g.all_rows(),
        };
        assert_eq!(all.segments(), g.all_versions().segments());
        // A few rows: their CRNs are rendered one by one instead.
        for id in ids.iter().take(10) {
            g.set_verdict(*id, &Verdict::CLEAR, 250);
        }
        let mut e = Estate::new(g.interner().clone());
        e.edge(&crn(5), &crn(7), Relation::FlowsTo);
        e.edge(&crn(7), &crn(5), Relation::FlowsTo);
        e.scan_into(&mut g, 250, 3);
        let rows = g.take_dirty_rows();
        assert_eq!(rows.counts(), (10, 2));
        let owned = g.versions(&rows);
        assert_eq!(GraphVersions { graph: &g, rows }.segments(), owned.segments());
        let reader = g.interner().reader();
        for n in g.nodes().take(50) {
            let mut out = Vec::new();
            g.crn_into(&reader, n.id(), &mut out);
            assert_eq!(out, g.crn_with(&reader, n.id()).into_bytes());
        }
    }
}

//! The [`GraphStore`]: opening `graph.redb`, a commit (its segments, or a
//! checkpoint when one is due), loading the latest state at a restart,
//! replaying the state as of a time, and the store's bookkeeping.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use svc_graph::graph::{EdgeVersion, NodeRow, NodeVersion};

use super::error::StoreError;
use super::replays::{GraphAt, Replays};
use super::segments::{SEGMENT_SHARDS, compress, piece_of, pieces, plain, replay};
use super::versions::{Part, Stopped, Versions};
use crate::bytes::DecodeError;
use crate::codec::{decode_edge_keyed, decode_node};
use crate::health::{Fault, Reopening};
use crate::replica::{Recorded, Shipper};

const SYMBOLS: TableDefinition<u32, &str> = TableDefinition::new("symbols");
/// `commit_us -> kind` (delta or checkpoint).
pub(super) const COMMITS: TableDefinition<u64, u8> = TableDefinition::new("commits");
/// `(commit_us, part, shard) -> records`.
pub(super) const SEGMENTS: TableDefinition<(u64, u8, u16), &[u8]> = TableDefinition::new("segments");
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

const META_GENERATION: &str = "generation";
const META_SCAN_SEQ: &str = "scan_seq";
const META_OBSERVED: &str = "observed_s";
const META_LAST_COMMIT: &str = "last_commit_us";
const META_CHECKPOINT: &str = "checkpoint_us";
const META_DELTA_ROWS: &str = "delta_rows";

const KIND_DELTA: u8 = 0;
pub(super) const KIND_CHECKPOINT: u8 = 1;
pub(super) const PART_NODES: u8 = 0;
const PART_EDGES: u8 = 1;
/// The same parts, each segment LZ4-compressed behind its length (what
/// commits write; the plain parts are read from stores written before).
pub(super) const PART_NODES_LZ4: u8 = 2;
pub(super) const PART_EDGES_LZ4: u8 = 3;

/// A checkpoint is due when delta rows since the last one exceed this many times the graph's rows.
pub const CHECKPOINT_FACTOR: u64 = 4;

/// The ranges of segment shards a commit's segments are built in, one
/// after another: a commit holds about this fraction of its encoded
/// versions at once.
const SEGMENT_GROUPS: u16 = 8;

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

/// A commit's segments go in write transactions of at most this share of
/// the cache each. redb sums each page a transaction wrote into its
/// parent's checksum as it commits, taking the page back into its write
/// buffer: a page evicted to the file before then is written twice. The
/// write buffer is half the cache, and a transaction of a sixteenth of it
/// stays in it. In one transaction a first scan's 2.84 GB of segments at
/// 10^7 were written as ~6 GB (docs/decisions.md, "A commit's segments
/// are written in transactions of a few megabytes").
const TXN_SEGMENT_SHARE: usize = 16;

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
    pub(crate) db: Arc<Reopening>,
    path: PathBuf,
    /// Whole states replayed to answer questions about the past.
    pub(crate) replays: Replays,
    /// Handed each write transaction's record before it commits ([`crate::replica`]).
    pub(crate) shipper: parking_lot::RwLock<Option<Shipper>>,
    /// A commit this long after the last checkpoint writes one (0: only
    /// [`CHECKPOINT_FACTOR`] decides), so a retention window finds a
    /// checkpoint to keep ([`GraphStore::set_max_checkpoint_age`]).
    max_checkpoint_age_us: std::sync::atomic::AtomicU64,
    /// Segment bytes a commit writes in one transaction at most ([`TXN_SEGMENT_SHARE`]).
    txn_segment_bytes: usize,
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
        let mut store = GraphStore::on(db, path, open)?;
        store.txn_segment_bytes = cache_bytes / TXN_SEGMENT_SHARE;
        Ok(store)
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
            replays: Replays::default(),
            shipper: parking_lot::RwLock::new(None),
            max_checkpoint_age_us: std::sync::atomic::AtomicU64::new(0),
            txn_segment_bytes: CACHE_BYTES / TXN_SEGMENT_SHARE,
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

    /// The database, to read the other tables kept in `graph.redb`
    /// (`signal_store`; writes go through [`GraphStore::begin_write`]);
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

    pub(super) fn corrupt(&self, what: String, source: DecodeError) -> StoreError {
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

    /// The time of the last commit that wrote rows (a commit that changed
    /// none records only its bookkeeping); `None` before the first.
    pub fn last_content_commit(&self) -> Result<Option<u64>, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
        let last = commits.last().map_err(|e| err(e.into()))?;
        Ok(last.map(|(k, _)| k.value()))
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
        // commits change it, and they do not overlap).
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
        let max_age = self.max_checkpoint_age_us.load(std::sync::atomic::Ordering::Relaxed);
        let due = checkpoint == 0
            || delta_rows > CHECKPOINT_FACTOR * meta.rows.max(1)
            || (max_age > 0 && commit_us.saturating_sub(checkpoint) >= max_age);
        let kind = if due { KIND_CHECKPOINT } else { KIND_DELTA };
        // When every row changed (a first scan), the changes are the checkpoint.
        let full = (due && changed != meta.rows).then(full);
        let versions: Option<&dyn Versions> = match &full {
            Some(all) => Some(all),
            None => (due || changed > 0).then_some(changes as &dyn Versions),
        };

        let started = std::time::Instant::now();
        let (mut stored, mut transactions, mut waited_ms) = (0usize, 1usize, 0u64);
        // Built a range of segment shards at a time (an eighth of a first
        // scan's ~870 MB at 1M nodes held at once, not all of it),
        // compressed on every core (written and synced as about a third of
        // that), each inserted as soon as it is, in transactions of at most
        // `txn_segment_bytes` each (`TXN_SEGMENT_SHARE`). Only the last is
        // durable, and only it lists the commit: until it commits, the
        // segments before it are leftovers no reader reads. The building
        // starts before the write transaction, which waits for any other
        // writer (the remediation items written behind the last scan).
        let mut txn = std::thread::scope(|scope| -> Result<Recorded, StoreError> {
            let rx = versions.map(|versions| {
                let (tx, rx) = std::sync::mpsc::sync_channel::<(u8, u16, Vec<u8>)>(64);
                scope.spawn(move || {
                    // Stopped only when the inserting side failed (or never
                    // began), which reports why.
                    let _ = versions.write_segments(SEGMENT_GROUPS, &mut |part, first, buffers| {
                        let part = match part {
                            Part::Nodes => PART_NODES_LZ4,
                            Part::Edges => PART_EDGES_LZ4,
                        };
                        buffers
                            .into_par_iter()
                            .enumerate()
                            .filter(|(_, b)| !b.is_empty())
                            .try_for_each_with(tx.clone(), |tx, (i, b)| {
                                tx.send((part, first + i as u16, compress(&b))).map_err(|_| Stopped)
                            })
                    });
                });
                rx
            });
            let mut txn = self.begin_write()?;
            waited_ms = started.elapsed().as_millis() as u64;
            // Leftovers of a commit that did not finish: segments past the
            // last commit listed, whose own transactions committed but
            // whose last one did not. Readers skip them; this commit's
            // keys may reach theirs.
            txn.open_table(SEGMENTS)
                .map_err(|e| err(e.into()))?
                .retain_in(orphans_from(&txn, &err)?.., |_, _| false)
                .map_err(|e| err(e.into()))?;
            let Some(rx) = rx else {
                return Ok(txn);
            };
            let mut seg = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
            let mut open = 0usize;
            for (part, shard, bytes) in rx {
                if open > 0 && open + bytes.len() > self.txn_segment_bytes {
                    drop(seg);
                    txn.set_durability(Durability::None)
                        .map_err(|e| err(redb::Error::from(e)))?;
                    txn.commit()?;
                    txn = self.begin_write()?;
                    seg = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
                    (open, transactions) = (0, transactions + 1);
                }
                open += bytes.len();
                stored += bytes.len();
                for (field, piece) in pieces(shard, &bytes) {
                    seg.insert((commit_us, part, field), piece).map_err(|e| err(e.into()))?;
                }
            }
            drop(seg);
            Ok(txn)
        })?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        {
            let mut sym = txn.open_table(SYMBOLS).map_err(|e| err(e.into()))?;
            for (i, s) in symbols.iter().enumerate() {
                sym.insert((symbols_start + i) as u32, &**s)
                    .map_err(|e| err(e.into()))?;
            }
            if versions.is_some() {
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
        let written_ms = started.elapsed().as_millis() as u64;
        txn.commit()?;
        tracing::debug!(
            versions = changed,
            checkpoint = due,
            segment_bytes = stored,
            transactions,
            waited_ms,
            written_ms,
            durable_ms = started.elapsed().as_millis() as u64 - written_ms,
            "graph store committed"
        );
        Ok(commit_us)
    }

    /// Makes a commit write a checkpoint once the last one is `age_us` old
    /// (`None`: only when the deltas since outgrow [`CHECKPOINT_FACTOR`]
    /// times the graph). With a retention window of that length, pruning
    /// always finds a checkpoint at most a window before its start, so the
    /// history kept is at most two windows long.
    pub fn set_max_checkpoint_age(&self, age_us: Option<u64>) {
        self.max_checkpoint_age_us
            .store(age_us.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
    }

    /// Every row as of `ts_us` (the latest version of each written at or
    /// before it, live or not), nodes sorted by CRN.
    pub(super) fn state_as_of(&self, ts_us: u64) -> Result<GraphAt, StoreError> {
        let started = std::time::Instant::now();
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        self.check_kept(&txn, ts_us)?;
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
        // The commits read; segments of no commit (`orphans_from`) are not.
        let listed = commits
            .range(start..=ts_us)
            .map_err(|e| err(e.into()))?
            .map(|item| item.map(|(k, _)| k.value()))
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|e| err(e.into()))?;
        // Segment values per (part, shard), in commit order; a segment's
        // pieces follow its first in the key order, joined to it.
        let mut parts: Vec<Vec<(bool, Vec<u8>)>> = vec![Vec::new(); 2 * SEGMENT_SHARDS as usize];
        // The commit of each list's last segment.
        let mut last_commit: Vec<u64> = vec![0; 2 * SEGMENT_SHARDS as usize];
        let seg = txn.open_table(SEGMENTS).map_err(|e| err(e.into()))?;
        for item in seg
            .range((start, 0u8, 0u16)..=(ts_us, u8::MAX, u16::MAX))
            .map_err(|e| err(e.into()))?
        {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            let (commit, part, field) = k.value();
            if listed.binary_search(&commit).is_err() {
                continue;
            }
            let (part, compressed) = match part {
                PART_NODES | PART_EDGES => (part, false),
                PART_NODES_LZ4 => (PART_NODES, true),
                PART_EDGES_LZ4 => (PART_EDGES, true),
                _ => return Err(self.corrupt("segment key".into(), DecodeError("segment key out of range"))),
            };
            let (shard, piece) = piece_of(field);
            let at = usize::from(part) * SEGMENT_SHARDS as usize + usize::from(shard);
            let list = &mut parts[at];
            if piece == 0 {
                list.push((compressed, v.value().to_vec()));
                last_commit[at] = commit;
            } else {
                // A piece of a plain segment, or without its first piece of
                // the same commit, was never written.
                match list.last_mut() {
                    Some((true, first)) if last_commit[at] == commit => first.extend_from_slice(v.value()),
                    _ => {
                        return Err(
                            self.corrupt("segment key".into(), DecodeError("segment piece without its segment"))
                        );
                    }
                }
            }
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

/// The first segment key past the last commit `COMMITS` lists: the
/// segments from there on belong to no commit (see [`GraphStore::commit`]).
fn orphans_from(txn: &Recorded, err: &impl Fn(redb::Error) -> StoreError) -> Result<(u64, u8, u16), StoreError> {
    let commits = txn.open_table(COMMITS).map_err(|e| err(e.into()))?;
    let last = commits.last().map_err(|e| err(e.into()))?.map_or(0, |(k, _)| k.value());
    Ok((last + 1, 0, 0))
}

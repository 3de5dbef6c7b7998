//! `graph.redb`: every version of every node and edge.
//!
//! A change of a node writes the version `(crn, valid_from) -> fields` and
//! closes the previous version (its `valid_to` becomes the new `valid_from`);
//! a logical deletion rewrites the current version with its `valid_to`. So
//! `graph at T` is the set of versions with `valid_from <= T` and
//! (`valid_to` 0 or later than T), read from the store, not from scans. The
//! `*_current` tables hold the latest version of each node and edge and are
//! what a restart loads. The interner's table is stored alongside so
//! symbols in stored rows keep their meaning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use thiserror::Error;

use super::codec::{DecodeError, decode_edge, decode_node, edge_key, encode_edge, encode_node};
use crate::graph::{Changes, EdgeVersion, NodeRow, NodeVersion};

const SYMBOLS: TableDefinition<u32, &str> = TableDefinition::new("symbols");
const NODE_CURRENT: TableDefinition<&str, &[u8]> = TableDefinition::new("node_current");
const NODE_VERSIONS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("node_versions");
const EDGE_CURRENT: TableDefinition<&str, &[u8]> = TableDefinition::new("edge_current");
const EDGE_VERSIONS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("edge_versions");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

const META_GENERATION: &str = "generation";
const META_SCAN_SEQ: &str = "scan_seq";
const META_LAST_COMMIT: &str = "last_commit_us";

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot open graph store {path}: {source}")]
    Open { path: PathBuf, source: Box<redb::Error> },
    #[error("graph store {path}: {source}")]
    Db { path: PathBuf, source: Box<redb::Error> },
    #[error("graph store {path}: {what}: {source}")]
    Corrupt { path: PathBuf, what: String, source: DecodeError },
}

/// Bookkeeping written with every commit.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitMeta {
    pub generation: u64,
    pub scan_seq: u64,
    pub commit_us: u64,
}

/// Everything a restart needs.
#[derive(Debug, Default)]
pub struct Loaded {
    pub symbols: Vec<String>,
    pub nodes: Vec<NodeRow>,
    pub edges: Vec<EdgeVersion>,
    pub meta: CommitMeta,
}

/// The graph as it was at one time.
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

pub struct GraphStore {
    db: Database,
    path: PathBuf,
}

fn live_at(valid_from: u64, valid_to: u64, ts: u64) -> bool {
    valid_from <= ts && (valid_to == 0 || valid_to > ts)
}

impl GraphStore {
    /// Opens or creates the store. A file that is not a readable redb
    /// database is an error naming the path, never replaced.
    pub fn open(path: &Path) -> Result<GraphStore, StoreError> {
        let open_err = |e: redb::Error| StoreError::Open { path: path.to_owned(), source: Box::new(e) };
        let db = Database::create(path).map_err(|e| open_err(e.into()))?;
        let store = GraphStore { db, path: path.to_owned() };
        let txn = store.db.begin_write().map_err(|e| open_err(e.into()))?;
        {
            txn.open_table(SYMBOLS).map_err(|e| open_err(e.into()))?;
            txn.open_table(NODE_CURRENT).map_err(|e| open_err(e.into()))?;
            txn.open_table(NODE_VERSIONS).map_err(|e| open_err(e.into()))?;
            txn.open_table(EDGE_CURRENT).map_err(|e| open_err(e.into()))?;
            txn.open_table(EDGE_VERSIONS).map_err(|e| open_err(e.into()))?;
            txn.open_table(META).map_err(|e| open_err(e.into()))?;
        }
        txn.commit().map_err(|e| open_err(e.into()))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db_err(&self) -> impl Fn(redb::Error) -> StoreError + '_ {
        |e| StoreError::Db { path: self.path.clone(), source: Box::new(e) }
    }

    fn corrupt(&self, what: String) -> impl FnOnce(DecodeError) -> StoreError + '_ {
        move |source| StoreError::Corrupt { path: self.path.clone(), what, source }
    }

    /// Loads the symbol table and the latest version of every node and edge.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let err = self.db_err();
        let txn = self.db.begin_read().map_err(|e| err(e.into()))?;
        let mut out = Loaded::default();
        let symbols = txn.open_table(SYMBOLS).map_err(|e| err(e.into()))?;
        for (i, item) in symbols.iter().map_err(|e| err(e.into()))?.enumerate() {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            if k.value() as usize != i {
                return Err(self.corrupt("symbol table".into())(DecodeError("symbol table has a gap")));
            }
            out.symbols.push(v.value().to_owned());
        }
        let nodes = txn.open_table(NODE_CURRENT).map_err(|e| err(e.into()))?;
        out.nodes.reserve(nodes.len().map_err(|e| err(e.into()))? as usize);
        for item in nodes.iter().map_err(|e| err(e.into()))? {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            out.nodes.push(decode_node(v.value()).map_err(self.corrupt(format!("node {}", k.value())))?);
        }
        let edges = txn.open_table(EDGE_CURRENT).map_err(|e| err(e.into()))?;
        for item in edges.iter().map_err(|e| err(e.into()))? {
            let (_, v) = item.map_err(|e| err(e.into()))?;
            out.edges.push(decode_edge(v.value()).map_err(self.corrupt("edge".into()))?);
        }
        let meta = txn.open_table(META).map_err(|e| err(e.into()))?;
        let get = |k: &str| -> Result<u64, StoreError> {
            Ok(meta.get(k).map_err(|e| err(e.into()))?.map(|v| v.value()).unwrap_or(0))
        };
        out.meta = CommitMeta {
            generation: get(META_GENERATION)?,
            scan_seq: get(META_SCAN_SEQ)?,
            commit_us: get(META_LAST_COMMIT)?,
        };
        Ok(out)
    }

    /// Writes new symbols (table positions from `symbols_start`), the changed
    /// versions and the bookkeeping in one durable transaction.
    pub fn commit(
        &self,
        symbols_start: usize,
        symbols: &[Arc<str>],
        changes: &Changes,
        meta: CommitMeta,
    ) -> Result<(), StoreError> {
        let err = self.db_err();
        let mut txn = self.db.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate).map_err(|e| err(redb::Error::from(e)))?;
        {
            let mut sym = txn.open_table(SYMBOLS).map_err(|e| err(e.into()))?;
            for (i, s) in symbols.iter().enumerate() {
                sym.insert((symbols_start + i) as u32, &**s).map_err(|e| err(e.into()))?;
            }
            let mut current = txn.open_table(NODE_CURRENT).map_err(|e| err(e.into()))?;
            let mut versions = txn.open_table(NODE_VERSIONS).map_err(|e| err(e.into()))?;
            for v in &changes.nodes {
                let prev = current.get(v.crn.as_str()).map_err(|e| err(e.into()))?.map(|g| g.value().to_vec());
                if let Some(prev) = prev {
                    let mut prev = decode_node(&prev).map_err(self.corrupt(format!("node {}", v.crn)))?;
                    if prev.valid_from < v.row.valid_from && (prev.valid_to == 0 || prev.valid_to > v.row.valid_from) {
                        prev.valid_to = v.row.valid_from;
                        versions
                            .insert((v.crn.as_str(), prev.valid_from), encode_node(&prev).as_slice())
                            .map_err(|e| err(e.into()))?;
                    }
                }
                let bytes = encode_node(&v.row);
                versions.insert((v.crn.as_str(), v.row.valid_from), bytes.as_slice()).map_err(|e| err(e.into()))?;
                current.insert(v.crn.as_str(), bytes.as_slice()).map_err(|e| err(e.into()))?;
            }
            let mut current = txn.open_table(EDGE_CURRENT).map_err(|e| err(e.into()))?;
            let mut versions = txn.open_table(EDGE_VERSIONS).map_err(|e| err(e.into()))?;
            for e in &changes.edges {
                let key = edge_key(e);
                let prev = current.get(key.as_str()).map_err(|x| err(x.into()))?.map(|g| g.value().to_vec());
                if let Some(prev) = prev {
                    let mut prev = decode_edge(&prev).map_err(self.corrupt(format!("edge {key}")))?;
                    if prev.valid_from < e.valid_from && (prev.valid_to == 0 || prev.valid_to > e.valid_from) {
                        prev.valid_to = e.valid_from;
                        versions
                            .insert((key.as_str(), prev.valid_from), encode_edge(&prev).as_slice())
                            .map_err(|x| err(x.into()))?;
                    }
                }
                let bytes = encode_edge(e);
                versions.insert((key.as_str(), e.valid_from), bytes.as_slice()).map_err(|x| err(x.into()))?;
                current.insert(key.as_str(), bytes.as_slice()).map_err(|x| err(x.into()))?;
            }
            let mut m = txn.open_table(META).map_err(|e| err(e.into()))?;
            m.insert(META_GENERATION, meta.generation).map_err(|e| err(e.into()))?;
            m.insert(META_SCAN_SEQ, meta.scan_seq).map_err(|e| err(e.into()))?;
            m.insert(META_LAST_COMMIT, meta.commit_us).map_err(|e| err(e.into()))?;
        }
        txn.commit().map_err(|e| err(e.into()))?;
        Ok(())
    }

    /// The graph as it was at `ts_us`: the versions live then.
    pub fn graph_at(&self, ts_us: u64) -> Result<GraphAt, StoreError> {
        let err = self.db_err();
        let txn = self.db.begin_read().map_err(|e| err(e.into()))?;
        let mut out = GraphAt::default();
        let nodes = txn.open_table(NODE_VERSIONS).map_err(|e| err(e.into()))?;
        for item in nodes.iter().map_err(|e| err(e.into()))? {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            let (crn, valid_from) = k.value();
            if valid_from > ts_us {
                continue;
            }
            let row = decode_node(v.value()).map_err(self.corrupt(format!("node {crn}")))?;
            if live_at(row.valid_from, row.valid_to, ts_us) {
                out.nodes.push(NodeVersion { crn: crn.to_owned(), row });
            }
        }
        let edges = txn.open_table(EDGE_VERSIONS).map_err(|e| err(e.into()))?;
        for item in edges.iter().map_err(|e| err(e.into()))? {
            let (k, v) = item.map_err(|e| err(e.into()))?;
            if k.value().1 > ts_us {
                continue;
            }
            let e = decode_edge(v.value()).map_err(self.corrupt("edge".into()))?;
            if live_at(e.valid_from, e.valid_to, ts_us) {
                out.edges.push(e);
            }
        }
        Ok(out)
    }

    /// Added, removed and changed nodes and edges between `from_us` and `to_us`.
    pub fn diff(&self, from_us: u64, to_us: u64) -> Result<GraphDiff, StoreError> {
        let before = self.graph_at(from_us)?;
        let after = self.graph_at(to_us)?;
        let mut old: BTreeMap<String, NodeVersion> = before.nodes.into_iter().map(|n| (n.crn.clone(), n)).collect();
        let mut out = GraphDiff::default();
        for n in after.nodes {
            match old.remove(&n.crn) {
                None => out.added.push(n),
                Some(o) if o.row.valid_from != n.row.valid_from => out.changed.push((o, n)),
                Some(_) => {}
            }
        }
        out.removed = old.into_values().collect();
        let mut old: BTreeMap<String, EdgeVersion> = before.edges.into_iter().map(|e| (edge_key(&e), e)).collect();
        for e in after.edges {
            match old.remove(&edge_key(&e)) {
                None => out.edges_added.push(e),
                Some(o) if o.valid_from != e.valid_from => out.edges_changed.push((o, e)),
                Some(_) => {}
            }
        }
        out.edges_removed = old.into_values().collect();
        Ok(out)
    }

    /// Number of stored node and edge versions.
    pub fn version_counts(&self) -> Result<(u64, u64), StoreError> {
        let err = self.db_err();
        let txn = self.db.begin_read().map_err(|e| err(e.into()))?;
        let n = txn.open_table(NODE_VERSIONS).map_err(|e| err(e.into()))?.len().map_err(|e| err(e.into()))?;
        let e = txn.open_table(EDGE_VERSIONS).map_err(|e| err(e.into()))?.len().map_err(|e| err(e.into()))?;
        Ok((n, e))
    }
}

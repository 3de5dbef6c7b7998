//! `graph.redb` as a log of records a standby applies.
//!
//! Every write transaction of `graph.redb` goes through a [`Recorded`]:
//! the tables it opens record each insert and removal (table name, the
//! table's key and value types as a shape tag, key bytes, value bytes or
//! a tombstone) as well as performing it. Its commit bumps the store's
//! `state_seq` (`meta`, in the same transaction), hands the record to the
//! [`Shipper`] when one is set, and commits; a shipper's error aborts the
//! transaction. [`GraphStore::apply_record`] applies a record shipped from
//! another store in one durable transaction, so a standby's `graph.redb`
//! holds, table by table, the leader's rows at the same `state_seq`.
//!
//! Keys and values are recorded as redb stores them (`Value::as_bytes`)
//! and read back only after their bytes were checked to be a valid form
//! of the shape's types (redb's `from_bytes` panics on others): a record
//! comes from the network, and a malformed one is an error, never a
//! panic. The shapes are the few key/value type pairs of `graph.redb`'s
//! tables ([`Shape`]); tables are opened on apply by name, so the tables
//! other crates define (remediation, signals) need no registry here.
//!
//! The ops are kept only while a shipper is set (a first scan's record
//! is about the size of its compressed segments); without one a write
//! only bumps `state_seq`. A transaction keeps the shipper it began with.
//! When the commit fails after the shipper took the record (an I/O
//! error), the store does not hold it: its next write ships the same seq
//! again, with what that write did, and the receiving side keeps the last
//! record shipped under a seq.
//!
//! A standby that fell behind the compacted log installs a copy of the
//! leader's whole store instead ([`GraphStore::copy_out`],
//! [`GraphStore::install_copy`], in `replica/copy.rs`).
//!
//! Transactions that write no rows are not records: the one that creates
//! a store's tables when it is opened (every node creates the same), and
//! the empty durable commits of `sync` and `probe`. The record format is
//! in `docs/formats.md` ("State records").

use std::borrow::Borrow;
use std::ops::{Deref, RangeBounds};
use std::sync::Arc;

use parking_lot::Mutex;
use redb::{Durability, ReadableDatabase, ReadableTable, Table, TableDefinition, TableError, TableHandle};

use crate::graph_store::{GraphStore, StoreError};
use crate::health::Reopening;

mod copy;
mod record;
#[cfg(test)]
mod tests;

use record::ApplyError;
pub use record::{Op, Part, RECORD_V1, RecordError, Rows, Shape, StateRecord, TableOps, contents};

/// Called inside each write transaction of graph.redb, before it commits, with the
/// transaction's sequence number (1, 2, 3 ... gap-free per store) and its record.
/// An Err aborts the transaction: the write fails and nothing is stored.
pub type Shipper = std::sync::Arc<dyn Fn(u64, &[u8]) -> Result<(), String> + Send + Sync>;

/// `meta` key: the seq of the last record written or applied (absent: 0).
const META_STATE_SEQ: &str = "state_seq";
const META: TableDefinition<&str, u64> = crate::graph_store::META;

/// A write transaction of `graph.redb` whose tables record what they
/// write; see the module docs. Begun by [`GraphStore::begin_write`];
/// dropped without [`Recorded::commit`], nothing is written.
pub struct Recorded {
    txn: redb::WriteTransaction,
    shipper: Option<Shipper>,
    /// The tables' ops, grouped per table opened (only with a shipper).
    record: Mutex<Vec<u8>>,
    db: Arc<Reopening>,
    generation: u64,
    err: Box<dyn Fn(redb::Error) -> StoreError + Send>,
    path: std::path::PathBuf,
}

impl Recorded {
    /// Opens (or creates) a table whose writes are recorded.
    pub fn open_table<K, V>(&self, def: TableDefinition<K, V>) -> Result<RecordedTable<'_, K, V>, TableError>
    where
        K: Part,
        V: Part,
        (K, V): Shape,
    {
        let table = self.txn.open_table(def)?;
        let log = self.shipper.is_some().then(|| TableLog {
            into: &self.record,
            name: def.name().to_owned(),
            shape: <(K, V)>::TAG,
            ops: 0,
            bytes: Vec::new(),
        });
        Ok(RecordedTable { table, log })
    }

    pub fn set_durability(&mut self, durability: Durability) -> Result<(), redb::SetDurabilityError> {
        self.txn.set_durability(durability)
    }

    /// Bumps `state_seq`, ships the record (a shipper's error aborts the
    /// transaction: nothing is stored) and commits. Returns the seq.
    pub fn commit(self) -> Result<u64, StoreError> {
        let err = &self.err;
        let seq = {
            let mut meta = self.txn.open_table(META).map_err(|e| err(e.into()))?;
            let seq = meta
                .get(META_STATE_SEQ)
                .map_err(|e| err(e.into()))?
                .map_or(0, |v| v.value())
                + 1;
            meta.insert(META_STATE_SEQ, seq).map_err(|e| err(e.into()))?;
            seq
        };
        if let Some(ship) = &self.shipper {
            let mut record = vec![RECORD_V1];
            record.append(&mut self.record.lock());
            ship(seq, &record).map_err(|reason| StoreError::NotShipped {
                path: self.path.clone(),
                seq,
                reason,
            })?;
        }
        self.txn.commit().map_err(|e| err(e.into()))?;
        self.db.wrote(self.generation);
        Ok(seq)
    }
}

/// What a [`RecordedTable`] has written, added to its transaction's
/// record when the table is dropped.
struct TableLog<'t> {
    into: &'t Mutex<Vec<u8>>,
    name: String,
    shape: u8,
    ops: u32,
    bytes: Vec<u8>,
}

impl TableLog<'_> {
    fn insert(&mut self, key: &[u8], value: &[u8]) {
        record::write_op(&mut self.bytes, Op::Insert(key, value));
        self.ops += 1;
    }

    fn remove(&mut self, key: &[u8]) {
        record::write_op(&mut self.bytes, Op::Remove(key));
        self.ops += 1;
    }
}

impl Drop for TableLog<'_> {
    fn drop(&mut self) {
        record::write_group(&mut self.into.lock(), &self.name, self.shape, self.ops, &self.bytes);
    }
}

/// A table of a [`Recorded`] transaction: reads as a `redb::Table`;
/// [`RecordedTable::insert`], [`RecordedTable::remove`],
/// [`RecordedTable::retain`] and [`RecordedTable::retain_in`] write and
/// record.
pub struct RecordedTable<'t, K: Part, V: Part> {
    table: Table<'t, K, V>,
    log: Option<TableLog<'t>>,
}

impl<'t, K: Part, V: Part> Deref for RecordedTable<'t, K, V> {
    type Target = Table<'t, K, V>;

    fn deref(&self) -> &Table<'t, K, V> {
        &self.table
    }
}

impl<K: Part, V: Part> RecordedTable<'_, K, V> {
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<(), redb::StorageError> {
        self.table.insert(key.borrow(), value.borrow())?;
        if let Some(log) = &mut self.log {
            log.insert(K::as_bytes(key.borrow()).as_ref(), V::as_bytes(value.borrow()).as_ref());
        }
        Ok(())
    }

    /// Removes `key`; whether it was there.
    pub fn remove<'k>(&mut self, key: impl Borrow<K::SelfType<'k>>) -> Result<bool, redb::StorageError> {
        let removed = self.table.remove(key.borrow())?.is_some();
        if removed && let Some(log) = &mut self.log {
            log.remove(K::as_bytes(key.borrow()).as_ref());
        }
        Ok(removed)
    }

    /// Removes every row for which `keep` is false.
    pub fn retain<F>(&mut self, keep: F) -> Result<(), redb::StorageError>
    where
        F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    {
        match &mut self.log {
            None => self.table.retain(keep),
            Some(log) => self.table.retain(logged::<K, V, F>(log, keep)),
        }
    }

    /// Removes every row in `range` for which `keep` is false.
    pub fn retain_in<'a, KR, F>(&mut self, range: impl RangeBounds<KR> + 'a, keep: F) -> Result<(), redb::StorageError>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
        F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    {
        match &mut self.log {
            None => self.table.retain_in(range, keep),
            Some(log) => self.table.retain_in(range, logged::<K, V, F>(log, keep)),
        }
    }
}

/// `keep`, recording the removal of each row it does not keep.
fn logged<'l, K: Part, V: Part, F>(
    log: &'l mut TableLog<'_>,
    mut keep: F,
) -> impl for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool + 'l
where
    F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool + 'l,
{
    let mut key = Vec::new();
    move |k, v| {
        key.clear();
        key.extend_from_slice(K::as_bytes(&k).as_ref());
        let kept = keep(k, v);
        if !kept {
            log.remove(&key);
        }
        kept
    }
}

impl GraphStore {
    /// Sets (or, with `None`, clears) the shipper every later write
    /// transaction of this store hands its record to before it commits.
    pub fn set_shipper(&self, shipper: Option<Shipper>) {
        *self.shipper.write() = shipper;
    }

    /// The seq of the last record written or applied here (0 for a new store).
    pub fn state_seq(&self) -> Result<u64, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let meta = match txn.open_table(META) {
            Ok(m) => m,
            Err(TableError::TableDoesNotExist(_)) => return Ok(0),
            Err(e) => return Err(err(e.into())),
        };
        Ok(meta
            .get(META_STATE_SEQ)
            .map_err(|e| err(e.into()))?
            .map_or(0, |v| v.value()))
    }

    /// Begins a write transaction whose writes are recorded and shipped
    /// ([`Recorded`]): the one way to write this database.
    pub fn begin_write(&self) -> Result<Recorded, StoreError> {
        let err = self.db_err();
        let (db, generation) = self.db.get_at().map_err(StoreError::Unavailable)?;
        let txn = db.begin_write().map_err(|e| err(e.into()))?;
        Ok(Recorded {
            txn,
            shipper: self.shipper.read().clone(),
            record: Mutex::new(Vec::new()),
            db: Arc::clone(&self.db),
            generation,
            err: Box::new(err),
            path: self.path().to_owned(),
        })
    }

    /// Applies `record`, shipped from another store under `seq`, in one
    /// durable transaction that sets `state_seq` to `seq`; the shipper is
    /// not called. `Ok(false)`, nothing done, when `seq` was applied
    /// already; [`StoreError::RecordGap`] when records before it are
    /// missing; [`StoreError::BadRecord`] when it is malformed or does not
    /// fit this store's tables (nothing of it is applied).
    pub fn apply_record(&self, seq: u64, record: &[u8]) -> Result<bool, StoreError> {
        let err = self.db_err();
        let (db, generation) = self.db.get_at().map_err(StoreError::Unavailable)?;
        let mut txn = db.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        let state_seq = txn
            .open_table(META)
            .map_err(|e| err(e.into()))?
            .get(META_STATE_SEQ)
            .map_err(|e| err(e.into()))?
            .map_or(0, |v| v.value());
        if seq <= state_seq {
            return Ok(false);
        }
        if seq > state_seq + 1 {
            return Err(StoreError::RecordGap {
                path: self.path().to_owned(),
                seq,
                state_seq,
            });
        }
        let bad = |e: RecordError| StoreError::BadRecord {
            path: self.path().to_owned(),
            seq,
            what: e.0,
        };
        let decoded = StateRecord::decode(record).map_err(bad)?;
        decoded.apply(&txn).map_err(|e| match e {
            ApplyError::Bad(e) => bad(e),
            ApplyError::Db(e) => err(e),
        })?;
        self.commit_applied(txn, seq, generation)?;
        Ok(true)
    }

    /// Sets `state_seq` to `seq` in `txn` (what another store's records
    /// brought this one to) and commits it.
    fn commit_applied(&self, txn: redb::WriteTransaction, seq: u64, generation: u64) -> Result<(), StoreError> {
        let err = self.db_err();
        txn.open_table(META)
            .map_err(|e| err(e.into()))?
            .insert(META_STATE_SEQ, seq)
            .map_err(|e| err(e.into()))?;
        txn.commit().map_err(|e| err(e.into()))?;
        self.db.wrote(generation);
        // Replayed states are shared by commit key: once another store's
        // records are applied, a question replays from what is stored now.
        self.replays.forget();
        Ok(())
    }
}

//! A whole `graph.redb` as state records: what a standby that fell behind
//! the compacted log installs in place of the records it missed.
//!
//! [`GraphStore::copy_out`] reads every table in one read transaction
//! and hands the rows to a sink as records of inserts of at most a given
//! size, table by table in key order (a table without rows is a group
//! without ops, which creates it). [`GraphStore::install_copy`] replaces
//! every table of a store with those records in one durable transaction
//! and sets its `state_seq` to the copy's, so a crash leaves either the
//! old store or the whole copy.

use redb::{Durability, ReadableDatabase, TableHandle};

use super::record::{self, ApplyError, Op, RECORD_V1, RecordError, StateRecord};
use super::{META, META_STATE_SEQ};
use crate::graph_store::{GraphStore, StoreError};

/// Builds records of at most `max` bytes (a single row larger than that
/// gets a record of its own) and hands each full one to `emit`.
struct Records<'e> {
    max: usize,
    out: Vec<u8>,
    /// The open table group: its ops' bytes and how many.
    ops: Vec<u8>,
    count: u32,
    emit: &'e mut dyn FnMut(Vec<u8>) -> Result<(), String>,
}

impl Records<'_> {
    fn close_group(&mut self, name: &str, shape: u8) {
        record::write_group(&mut self.out, name, shape, self.count, &self.ops);
        self.ops.clear();
        self.count = 0;
    }

    fn row(&mut self, name: &str, shape: u8, key: &[u8], value: &[u8]) -> Result<(), String> {
        record::write_op(&mut self.ops, Op::Insert(key, value));
        self.count += 1;
        if self.out.len() + self.ops.len() >= self.max {
            self.close_group(name, shape);
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.out.len() > 1 {
            let full = std::mem::replace(&mut self.out, vec![RECORD_V1]);
            (self.emit)(full)?;
        }
        Ok(())
    }
}

impl GraphStore {
    /// Hands a copy of every table to `emit` as state records of about
    /// `max_bytes` each, all from one read transaction; returns the
    /// `state_seq` the copy holds. An `Err` from `emit` stops the copy
    /// ([`StoreError::NotShipped`], naming it).
    pub fn copy_out(
        &self,
        max_bytes: usize,
        emit: &mut dyn FnMut(Vec<u8>) -> Result<(), String>,
    ) -> Result<u64, StoreError> {
        let err = self.db_err();
        let txn = self.database()?.begin_read().map_err(|e| err(e.into()))?;
        let seq = match txn.open_table(META) {
            Ok(meta) => meta
                .get(META_STATE_SEQ)
                .map_err(|e| err(e.into()))?
                .map_or(0, |v| v.value()),
            Err(redb::TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(err(e.into())),
        };
        let names: Vec<String> = txn
            .list_tables()
            .map_err(|e| err(e.into()))?
            .map(|h| h.name().to_owned())
            .collect();
        let mut records = Records {
            max: max_bytes,
            out: vec![RECORD_V1],
            ops: Vec::new(),
            count: 0,
            emit,
        };
        // The sink's refusal, kept apart from the store's own errors.
        let mut refused = None;
        for name in &names {
            let mut grouped = false;
            let shape = record::visit_rows(&txn, name, &mut |shape, key, value| {
                grouped = true;
                records.row(name, shape, key, value).map_err(|e| {
                    refused = Some(e);
                    redb::Error::Corrupted("copy stopped".to_owned())
                })
            });
            let shape = match shape {
                Ok(shape) => shape,
                Err(_) if refused.is_some() => break,
                Err(e) => return Err(err(e)),
            };
            // A table without rows still gets a group: it creates the table.
            if records.count > 0 || !grouped {
                records.close_group(name, shape);
            }
        }
        if refused.is_none()
            && let Err(e) = records.flush()
        {
            refused = Some(e);
        }
        match refused {
            None => Ok(seq),
            Some(reason) => Err(StoreError::NotShipped {
                path: self.path().to_owned(),
                seq,
                reason,
            }),
        }
    }

    /// Replaces every table of this store with the copy `records` hold
    /// (as [`GraphStore::copy_out`] made it) and sets `state_seq` to
    /// `seq`, in one durable transaction: nothing changes unless every
    /// record applies. An `Err` item (the copy could not be fetched) is
    /// [`StoreError::BadRecord`] with its reason.
    pub fn install_copy(
        &self,
        seq: u64,
        records: &mut dyn Iterator<Item = Result<Vec<u8>, String>>,
    ) -> Result<(), StoreError> {
        let err = self.db_err();
        let bad = |what: String| StoreError::BadRecord {
            path: self.path().to_owned(),
            seq,
            what,
        };
        let (db, generation) = self.db.get_at().map_err(StoreError::Unavailable)?;
        let mut txn = db.begin_write().map_err(|e| err(e.into()))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| err(redb::Error::from(e)))?;
        let tables: Vec<_> = txn.list_tables().map_err(|e| err(e.into()))?.collect();
        for table in tables {
            txn.delete_table(table).map_err(|e| err(e.into()))?;
        }
        for bytes in records {
            let bytes = bytes.map_err(bad)?;
            let decoded = StateRecord::decode(&bytes).map_err(|RecordError(what)| bad(what))?;
            decoded.apply(&txn).map_err(|e| match e {
                ApplyError::Bad(RecordError(what)) => bad(what),
                ApplyError::Db(e) => err(e),
            })?;
        }
        self.commit_applied(txn, seq, generation)
    }
}

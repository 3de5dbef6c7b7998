//! Opening a ledger file: the tables of a new one, the checks of an
//! existing one (format, tables, head record against the last event), and
//! the one-time upgrade of a format 1 file.

use std::path::PathBuf;

use redb::{Database, ReadableDatabase, ReadableTable, TableError};

use super::error::LedgerError;
use super::{codec, postings, tables, type_index};

/// Creates the tables of a new ledger, or checks an existing one: format,
/// all tables present, and the head record matching the last event.
/// Returns the last seq.
pub(super) fn init(db: &Database) -> Result<u64, LedgerError> {
    let not_ledger = |reason: &str| LedgerError::Open {
        path: PathBuf::new(),
        reason: reason.to_owned(),
    };
    let txn = db.begin_read()?;
    let meta = match txn.open_table(tables::META) {
        Ok(meta) => meta,
        Err(TableError::TableDoesNotExist(_)) => {
            if txn.list_tables()?.next().is_some() {
                return Err(not_ledger("not a ledger file"));
            }
            drop(txn);
            create_tables(db)?;
            return Ok(0);
        }
        Err(e) => return Err(e.into()),
    };
    let upgrade = match tables::read_format(&meta)? {
        Some(tables::FORMAT_VERSION) => false,
        Some(tables::FORMAT_V1) => true,
        Some(v) => return Err(not_ledger(&format!("unsupported ledger format {v}"))),
        None => return Err(not_ledger("missing format record")),
    };
    let events = txn.open_table(tables::EVENTS)?;
    if !upgrade {
        txn.open_table(tables::BY_TYPE)?;
        txn.open_table(tables::CRN_RECENT)?;
        txn.open_table(tables::CRN_RUNS)?;
    }
    txn.open_table(tables::SESSIONS)?;
    let head = tables::read_head(&meta)?;
    let last = events.last()?.map(|(k, _)| k.value()).unwrap_or(0);
    if last != head.seq {
        return Err(not_ledger(&format!(
            "head records event {} but the last stored event is {last}",
            head.seq
        )));
    }
    if let Some(bytes) = events.get(head.seq)? {
        let stored = codec::decode(bytes.value()).map_err(|e| not_ledger(&format!("event {}: {e}", head.seq)))?;
        if stored.hash != head.hash || stored.compute_hash(head.seq) != head.hash {
            return Err(not_ledger(&format!(
                "event {}: hash does not match the head record",
                head.seq
            )));
        }
    }
    drop(events);
    drop(txn);
    if upgrade {
        upgrade_v1(db)?;
    }
    Ok(head.seq)
}

/// Upgrades a format 1 file: drops the indexes older versions kept (a time
/// index, the CRN index as `by_crn` or `crn_postings`, the type index with
/// a key per event), builds the type index and the CRN postings from
/// `events` in one pass, and marks the file format 2, all in one
/// transaction.
fn upgrade_v1(db: &Database) -> Result<(), LedgerError> {
    tracing::info!("rebuilding the ledger's indexes from its events (once, for the new file format)");
    let mut w = db.begin_write()?;
    w.set_durability(redb::Durability::Immediate)?;
    w.delete_table(tables::LEGACY_BY_TIME)?;
    w.delete_table(tables::LEGACY_BY_CRN)?;
    w.delete_table(tables::LEGACY_CRN_POSTINGS)?;
    w.delete_table(tables::LEGACY_BY_TYPE)?;
    w.delete_table(tables::BY_TYPE)?;
    w.delete_table(tables::CRN_RECENT)?;
    w.delete_table(tables::CRN_RUNS)?;
    {
        let events = w.open_table(tables::EVENTS)?;
        let mut by_type = w.open_table(tables::BY_TYPE)?;
        let mut runs = w.open_table(tables::CRN_RUNS)?;
        w.open_table(tables::CRN_RECENT)?;
        let mut types = type_index::Rebuild::new();
        let mut crns = postings::Rebuild::new();
        for item in events.iter()? {
            let (k, v) = item?;
            let seq = k.value();
            let s = codec::decode(v.value()).map_err(|e| LedgerError::Corrupt(format!("event {seq}: {e}")))?;
            types.add(&mut by_type, s.event_type, seq)?;
            if !s.crn.is_empty() {
                crns.add(&mut runs, s.crn, seq)?;
            }
        }
        types.finish(&mut by_type)?;
        crns.finish(&mut runs)?;
        let mut meta = w.open_table(tables::META)?;
        tables::write_crn_recent(&mut meta, 0)?;
        tables::write_format(&mut meta)?;
    }
    w.commit()?;
    Ok(())
}

fn create_tables(db: &Database) -> Result<(), LedgerError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(redb::Durability::Immediate)?;
    {
        txn.open_table(tables::EVENTS)?;
        txn.open_table(tables::BY_TYPE)?;
        txn.open_table(tables::CRN_RECENT)?;
        txn.open_table(tables::CRN_RUNS)?;
        txn.open_table(tables::SESSIONS)?;
        let mut meta = txn.open_table(tables::META)?;
        tables::write_format(&mut meta)?;
        tables::write_head(&mut meta, &tables::Head::default())?;
        tables::write_anchor(&mut meta, &tables::Anchor::default())?;
        tables::write_savings(&mut meta, 0.0)?;
    }
    txn.commit()?;
    Ok(())
}
